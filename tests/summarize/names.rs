//! Names worth finding (issue 18): unique within a project, a user's name kept
//! through re-indexing (with a model over loopback HTTP and offline), the
//! opening request sent for a long session, tags normalised, and `@@`
//! references kept out of names, on real pi session files.

use std::path::{Path, PathBuf};

use crate::support::append_lines;
use crate::support::mock_provider::{MockProvider, Reply, Wire};
use crate::support::summarize::*;
use serde_json::{json, Value};
use session_index::features::summarize::{index_session, IndexOutcome, IndexRequest};
use session_index::plugin::host::Effect;
use session_index::store::meta::SessionMeta;

const KEY: &str = "sk-test-key-0123456789abcdef";
const MODEL: &str = "openai/gpt-4.1-mini";

fn with_model(mock: &MockProvider, extra: Value) -> Fixture {
    let mut config = json!({
        "modelKeys": [MODEL], "providers": {"openai": mock.provider_config()},
        "useHostModels": false, "offlineFallback": false, "timeoutMs": 30000,
    });
    for (k, v) in extra.as_object().unwrap() {
        config[k] = v.clone();
    }
    Fixture::with_keys(RATE_LIMITER, config, &[("openai", KEY)])
}

fn last_id(file: &Path) -> String {
    let text = std::fs::read_to_string(file).unwrap();
    let last: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    last["id"].as_str().unwrap().to_string()
}

/// What `/name <name>` appends (pi's `appendSessionInfo`).
fn name_session(file: &Path, name: &str, id: &str) {
    let parent = last_id(file);
    append_lines(
        file,
        &[
            json!({"type": "session_info", "id": id, "parentId": parent, "timestamp": "2026-11-22T05:00:00.000Z", "name": name}),
        ],
    );
}

/// What the plugin's own rename leaves in the file: `session_info`, then its index entry.
fn indexer_renamed(file: &Path, name: &str) {
    name_session(file, name, "7e570001");
    append_lines(
        file,
        &[
            json!({"type": "custom", "customType": "session-index:index", "data": {"success": true},
        "id": "7e570002", "parentId": "7e570001", "timestamp": "2026-11-22T05:00:01.000Z"}),
        ],
    );
}

fn renames(f: &Fixture) -> Vec<String> {
    f.effects()
        .into_iter()
        .filter_map(|e| match e {
            Effect::SetSessionName { name } => Some(name),
            _ => None,
        })
        .collect()
}

fn other_meta(f: &Fixture, id: &str, name: &str) {
    let meta: SessionMeta = serde_json::from_value(json!({
        "schemaVersion": 1, "sessionId": id, "sessionFile": "/elsewhere.jsonl", "name": name,
        "description": "d", "summary": "s", "cwd": "/home/user/demo",
        "createdAt": "2026-11-20T00:00:00Z", "updatedAt": "2026-11-20T00:00:00Z", "model": MODEL,
    }))
    .unwrap();
    session_index::store::meta::write(&f.meta_dir(), &meta).unwrap();
}

#[test]
fn a_model_is_shown_the_projects_names_and_a_taken_name_it_proposes_anyway_is_made_distinct() {
    let mock = MockProvider::start(Wire::OpenAi);
    let taken = "Token bucket rate limiter for the gateway";
    mock.push(Reply::answer_json(&answer(taken)));
    mock.push(Reply::answer_json(&answer(taken)));
    let f = with_model(&mock, json!({}));
    other_meta(&f, "0ther-5e55-10n", taken);
    other_meta(&f, "another-project", "Something elsewhere");

    // The index does not fail over a name (that would lose the summary): the name is made distinct.
    assert!(f.command().ok);
    let name = f.meta().unwrap().name;
    assert!(
        name.starts_with(taken) && name != taken,
        "made distinct: {name}"
    );
    let requests = mock.requests();
    assert_eq!(requests.len(), 1, "one model call");
    let first = requests[0].texts();
    assert!(
        first.contains("recent sessions") && first.contains(&format!("- {taken}")),
        "{first}"
    );
    assert!(first.contains("Something elsewhere"), "same cwd: listed");

    // Re-indexing (new messages) with the same proposal: still distinct, and never a failure.
    f.append_turns(None, 2, "burst sizes");
    assert!(f.command().ok);
    assert_ne!(f.meta().unwrap().name, taken);
}

#[test]
fn a_name_the_user_set_is_kept_through_indexing_with_a_model() {
    let mock = MockProvider::start(Wire::OpenAi);
    mock.push(Reply::answer_json(&answer("A name the model likes better")));
    mock.push(Reply::answer_json(&answer("Yet another model name here")));
    let f = with_model(&mock, json!({}));
    name_session(&f.session_file, "Rate limiter work", "5e551011");

    assert!(f.command().ok);
    assert_eq!(
        f.meta().unwrap().name,
        "Rate limiter work",
        "the meta takes the user's name"
    );
    assert!(
        renames(&f).is_empty(),
        "the session is not renamed: {:?}",
        renames(&f)
    );
    assert!(
        mock.requests()[0].texts().contains("Rate limiter work"),
        "the model is told the name"
    );

    // Re-indexing later (new messages) keeps it too.
    f.append_turns(None, 2, "burst sizes");
    assert!(f.command().ok);
    assert_eq!(f.meta().unwrap().name, "Rate limiter work");
    assert!(renames(&f).is_empty());
}

#[test]
fn the_indexers_own_name_is_replaced_but_a_later_user_name_is_not() {
    let mock = MockProvider::start(Wire::OpenAi);
    mock.push(Reply::answer_json(&answer("Fresh name from this index")));
    mock.push(Reply::answer_json(&answer("Newer name from the model")));
    let f = with_model(&mock, json!({}));
    indexer_renamed(&f.session_file, "Old name from a previous index");
    assert!(f.command().ok);
    assert_eq!(f.meta().unwrap().name, "Fresh name from this index");
    assert_eq!(renames(&f), ["Fresh name from this index"]);

    f.clear_effects();
    name_session(&f.session_file, "Fresh name from this index", "5e551012"); // the user re-types the same name
    f.append_turns(None, 1, "tests");
    assert!(f.command().ok);
    assert_eq!(
        f.meta().unwrap().name,
        "Fresh name from this index",
        "a /name is the user's, even if equal"
    );
    assert!(renames(&f).is_empty());
}

#[test]
fn a_name_the_user_set_is_kept_offline() {
    let f = Fixture::new(RATE_LIMITER, json!({"modelKeys": ["local/extractive"]}));
    name_session(&f.session_file, "Rate limiter work", "5e551013");
    assert!(f.command().ok);
    assert_eq!(f.meta().unwrap().name, "Rate limiter work");
    f.append_turns(None, 2, "burst sizes");
    assert!(f.command().ok);
    assert_eq!(
        f.meta().unwrap().name,
        "Rate limiter work",
        "kept through re-indexing"
    );
    assert!(renames(&f).is_empty());
}

#[test]
fn the_opening_request_of_a_long_session_reaches_the_model() {
    let mock = MockProvider::start(Wire::OpenAi);
    mock.push(Reply::answer_json(&answer(
        "Token bucket rate limiter for the gateway",
    )));
    let f = with_model(&mock, json!({"indexing": {"maxInputBytes": 4096}}));
    f.append_turns(None, 300, "padding the session");

    assert!(f.command().ok);
    let sent = mock.requests()[0].texts();
    assert!(
        sent.contains("Add per-client rate limiting to the API gateway for GW-142"),
        "the opening request"
    );
    assert!(
        sent.contains("padding the session: step 299"),
        "the newest part"
    );
    assert!(
        !sent.contains("padding the session: step 150,"),
        "the middle is left out"
    );
    assert!(
        sent.contains("opening request"),
        "the model is told what it reads"
    );
    let conversation = sent
        .split("<conversation>")
        .nth(1)
        .unwrap()
        .split("</conversation>")
        .next()
        .unwrap();
    assert!(
        conversation.len() <= 4096,
        "within maxInputBytes: {}",
        conversation.len()
    );
}

#[test]
fn tags_from_a_model_are_normalised() {
    let mock = MockProvider::start(Wire::OpenAi);
    let mut reply = answer("Token bucket rate limiter for the gateway");
    reply["tags"] = json!([
        "Rate Limiting",
        "rate limiting",
        "Rust",
        "@@other-session",
        "Ticket:GW-142",
        "ticket:gw-142",
        "file:src/limiter.rs"
    ]);
    mock.push(Reply::answer_json(&reply));
    let f = with_model(&mock, json!({}));
    assert!(f.command().ok);
    assert_eq!(
        f.meta().unwrap().tags,
        [
            "ticket:GW-142",
            "file:src/limiter.rs",
            "rate-limiting",
            "rust"
        ]
    );
}

/// A copy of a real session under a new id (same project), as a new session file.
fn copy_real(project: &Path, real: &Path, id: &str) -> PathBuf {
    let text = std::fs::read_to_string(real).unwrap();
    let mut lines = text.lines();
    let mut header: Value = serde_json::from_str(lines.next().unwrap()).unwrap();
    header["id"] = json!(id);
    let out = project.join(format!("2026-02-20T12-00-00-000Z_{id}.jsonl"));
    let body: Vec<&str> = lines.collect();
    std::fs::write(&out, format!("{header}\n{}\n", body.join("\n"))).unwrap();
    out
}

fn index_offline(f: &Fixture, file: &Path) -> SessionMeta {
    let request = IndexRequest {
        session_file: file.to_path_buf(),
        meta_dir: f.meta_dir(),
        leaf_id: None,
        force: true,
        offline: true,
        replace: session_index::store::meta::Replace::KeepModelWritten,
        past_cap: false,
    };
    match index_session(&f.services.model_env(), &request, &|| {}) {
        Ok(IndexOutcome::Indexed(done)) => done.meta,
        other => panic!(
            "{other:?}",
            other = other.map(|_| ()).map_err(|e| e.error.to_string())
        ),
    }
}

#[test]
fn offline_names_are_unique_across_a_project_of_real_sessions() {
    let f = Fixture::new(RATE_LIMITER, json!({}));
    let project = f.session_file.parent().unwrap().to_path_buf();
    let real = crate::support::plugin::fixtures_dir().join("real");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&real)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| session_index::session::open(p).is_ok())
        .collect();
    files.sort();
    // Two sessions that read alike: the same real session twice under new ids.
    let twin = files[2].clone();
    let hail = files
        .iter()
        .find(|f| f.to_string_lossy().contains("64ddb985"))
        .unwrap()
        .clone(); // "Hail", no topics
    let mut names = Vec::new();
    for (i, file) in files.iter().chain([&twin, &twin, &hail]).enumerate() {
        let copy = copy_real(
            &project,
            file,
            &format!("c0py{i:04}-0000-0000-0000-000000000000"),
        );
        names.push(index_offline(&f, &copy).name);
    }
    let n = names.len();
    let mut keys: Vec<String> = names.iter().map(|n| n.to_lowercase()).collect();
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), n, "names repeat in one project: {names:#?}");
    let base = &names[2];
    assert!(
        names[n - 3].starts_with(base.as_str()) && names[n - 3] != *base,
        "{names:#?}"
    );
    assert_eq!(
        names[n - 1],
        format!("{} (2026-02-19)", names[0]),
        "no topic of its own: the date"
    );
    assert!(
        names
            .iter()
            .all(|n| n.chars().count() <= 120 && !n.contains("@@")),
        "{names:#?}"
    );
}

#[test]
fn a_session_that_mentions_another_is_not_named_after_the_reference() {
    let f = Fixture::new(RATE_LIMITER, json!({}));
    let project = f.session_file.parent().unwrap().to_path_buf();
    let real = crate::support::plugin::fixtures_dir().join("real");
    let mention =
        project.join("2026-02-21T00-00-00-000Z_m3n710n0-0000-0000-0000-000000000000.jsonl");
    std::fs::write(&mention, format!("{}\n{}\n{}\n",
        json!({"type": "session", "version": 3, "id": "m3n710n0-0000-0000-0000-000000000000", "timestamp": "2026-02-21T00:00:00.000Z", "cwd": "/home/user/gitclaw"}),
        json!({"type": "message", "id": "u1", "parentId": null, "timestamp": "2026-02-21T00:00:01.000Z",
            "message": {"role": "user", "content": [{"type": "text", "text": "check `@@cron-in-gitclaw` and @@034d1cd7 then fix the cron schedule parser"}], "timestamp": 1}}),
        json!({"type": "message", "id": "a1", "parentId": "u1", "timestamp": "2026-02-21T00:00:02.000Z",
            "message": {"role": "assistant", "content": [{"type": "text", "text": "The cron schedule parser now accepts ranges."}],
                "provider": "mock", "model": "m", "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2,
                "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}, "stopReason": "stop", "timestamp": 2}})))
    .unwrap();
    copy_real(
        &project,
        &std::fs::read_dir(&real)
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path(),
        "r3a10000-0000-0000-0000-000000000000",
    );
    let meta = index_offline(&f, &mention);
    let all =
        serde_json::to_string(&(&meta.name, &meta.description, &meta.summary, &meta.tags)).unwrap();
    assert!(
        !all.contains("@@") && !all.contains("034d1cd7") && !all.contains("cron-in-gitclaw"),
        "{all}"
    );
    assert!(
        meta.name.to_lowercase().contains("cron schedule parser"),
        "{}",
        meta.name
    );
}
