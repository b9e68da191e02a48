//! Issue 24's planted-secrets measurement: every format of the corpus
//! (`tests/fixtures/secrets`) planted in every place of a session (first
//! message, user, assistant and thinking text, tool-call arguments, tool
//! output, bash command and output, compaction and branch summaries, a custom
//! message, a label, the session's name), then every path that turns session
//! text into output: `list --json`, `search --json` snippets, `show` (text and
//! JSON), `inspect`, the meta files `index --all --offline` writes, the raw
//! bytes of `index.sqlite` and its WAL, and the offline `query_session`
//! answer through the plugin's router, and the requests a model is sent when
//! a session is indexed and asked about (a mock provider on loopback).
//!
//! The tuned formats (`tuned.toml`, `held-out-1.toml` to `held-out-3.toml`:
//! each held-out round became tuned once the rules were changed for its
//! leaks) must not leak anywhere. The held-out formats (`held-out-4.toml`,
//! written before the rules were changed for round 3, never tuned on) may
//! leak only where the rules themselves miss them: an output path that
//! shows a held-out secret the redaction pass catches is a path that skipped
//! the pass. Run with `--nocapture` for the per-path counts.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::support::mock_provider::{MockProvider, Reply, Wire};
use crate::support::synth::{encode_cwd, Agent};
use serde_json::{json, Value};
use session_index::features::summarize::{index_session, IndexOutcome, IndexRequest};

#[derive(serde::Deserialize)]
struct CorpusFile {
    secret: Vec<Planted>,
}

#[derive(serde::Deserialize, Clone)]
struct Planted {
    format: String,
    text: String,
    fragments: Vec<String>,
}

fn corpus(files: &[&str]) -> Vec<Planted> {
    files
        .iter()
        .flat_map(|text| toml::from_str::<CorpusFile>(text).unwrap().secret)
        .collect()
}

const TUNED: [&str; 4] = [
    include_str!("../fixtures/secrets/tuned.toml"),
    include_str!("../fixtures/secrets/held-out-1.toml"),
    include_str!("../fixtures/secrets/held-out-2.toml"),
    include_str!("../fixtures/secrets/held-out-3.toml"),
];
const HELD_OUT: [&str; 1] = [include_str!("../fixtures/secrets/held-out-4.toml")];

/// The word that finds session `i` in a search (next to every planted copy).
fn marker(i: usize) -> String {
    format!("quokka{i}")
}

fn id(i: usize) -> String {
    format!("5ec2e75e-0000-4000-8000-{i:012}")
}

/// One session holding `p.text` in every place a session has text.
fn write_session(agent: &Agent, i: usize, p: &Planted) -> PathBuf {
    let cwd = format!("/work/vault{i}");
    let dir = agent.sessions().join(encode_cwd(&cwd));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!(
        "2026-02-20T12-00-{:02}-000Z_{}.jsonl",
        i % 60,
        id(i)
    ));
    let (m, t) = (marker(i), &p.text);
    let ts = "2026-02-20T12:00:00.000Z";
    let ms = 1_771_588_800_000i64 + i as i64;
    let msg = |id: &str, parent: Option<&str>, message: Value| json!({"type": "message", "id": id, "parentId": parent, "timestamp": ts, "message": message});
    let lines = vec![
        json!({"type": "session", "version": 3, "id": id(i), "timestamp": ts, "cwd": cwd}),
        msg(
            "e1",
            None,
            json!({"role": "user", "content": format!("{m} first: {t}"), "timestamp": ms}),
        ),
        msg(
            "e2",
            Some("e1"),
            json!({"role": "assistant", "content": [
            {"type": "thinking", "thinking": format!("{m} thinking: {t}")},
            {"type": "text", "text": format!("{m} noted: {t}")},
            {"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command": format!("echo {m} {t}")}}
        ], "timestamp": ms + 1}),
        ),
        msg(
            "e3",
            Some("e2"),
            json!({"role": "toolResult", "toolCallId": "c1", "toolName": "bash",
            "content": [{"type": "text", "text": format!("{m} output: {t}")}], "isError": false, "timestamp": ms + 2}),
        ),
        msg(
            "e4",
            Some("e3"),
            json!({"role": "bashExecution", "command": format!("echo {m} {t}"),
            "output": format!("{m} bash: {t}"), "exitCode": 0, "cancelled": false, "truncated": false, "timestamp": ms + 3}),
        ),
        json!({"type": "compaction", "id": "e5", "parentId": "e4", "timestamp": ts,
            "summary": format!("{m} compacted: {t}"), "firstKeptEntryId": "e3", "tokensBefore": 1000}),
        json!({"type": "branch_summary", "id": "e6", "parentId": "e5", "timestamp": ts, "fromId": "e2",
            "summary": format!("{m} branch: {t}")}),
        json!({"type": "custom_message", "id": "e7", "parentId": "e6", "timestamp": ts, "customType": "note",
            "content": format!("{m} custom: {t}"), "display": true}),
        json!({"type": "label", "id": "e8", "parentId": "e7", "timestamp": ts, "targetId": "e1", "label": format!("{m} {t}")}),
        json!({"type": "session_info", "id": "e9", "parentId": "e8", "timestamp": ts, "name": format!("{m} {t}")}),
        msg(
            "e10",
            Some("e9"),
            json!({"role": "user", "content": [{"type": "text", "text": format!("{m} again: {t}")}], "timestamp": ms + 4}),
        ),
        msg(
            "e11",
            Some("e10"),
            json!({"role": "assistant", "content": [{"type": "text", "text": format!("{m} done: {t}")}], "timestamp": ms + 5}),
        ),
    ];
    let body: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&path, body).unwrap();
    path
}

/// The binary's output (it must succeed).
fn cli(agent: &Path, args: &[&str]) -> String {
    let out = crate::cli::run(agent, args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Whether any fragment of `p` is in `text` (as written or JSON-escaped).
fn leaks(p: &Planted, text: &str) -> bool {
    p.fragments.iter().any(|f| {
        let escaped = serde_json::to_string(f).unwrap();
        text.contains(f.as_str()) || text.contains(&escaped[1..escaped.len() - 1])
    })
}

const OFFLINE: &str = r#"{"modelKeys":["local/extractive"],"query":{"maxCallsPerTurn":1000}}"#;

/// Per output path, the formats of `corpus` whose fragments it shows.
fn measure(corpus: &[Planted]) -> BTreeMap<&'static str, BTreeSet<String>> {
    let agent = Agent::new();
    let paths: Vec<PathBuf> = corpus
        .iter()
        .enumerate()
        .map(|(i, p)| write_session(&agent, i, p))
        .collect();
    let dir = agent.dir.as_path();
    let mut found: BTreeMap<&'static str, BTreeSet<String>> = BTreeMap::new();
    let mut check = |path: &'static str, p: &Planted, text: &str| {
        let formats = found.entry(path).or_default();
        if leaks(p, text) {
            formats.insert(p.format.clone());
        }
    };
    let list = cli(dir, &["list", "--all", "--json"]);
    for (i, (p, file)) in corpus.iter().zip(&paths).enumerate() {
        let file = file.to_str().unwrap();
        check("list --json", p, &list);
        let search = cli(dir, &["search", "--all", "--wait", "--json", &marker(i)]);
        assert!(
            search.contains(&id(i)),
            "search found session {i}: {search}"
        );
        check("search --json", p, &search);
        check("show", p, &cli(dir, &["show", file]));
        check("show --json", p, &cli(dir, &["show", "--json", file]));
        check("inspect", p, &cli(dir, &["inspect", file]));
    }
    cli(dir, &["index", "--all", "--offline"]);
    let (offline, _) = agent.services("/elsewhere", OFFLINE);
    for (i, p) in corpus.iter().enumerate() {
        let meta = agent.meta_dir().join(format!("{}.meta.json", id(i)));
        check(
            "meta file (offline)",
            p,
            &std::fs::read_to_string(meta).unwrap(),
        );
        let question = format!("What password or key was used in {}?", marker(i));
        check(
            "query_session (offline answer)",
            p,
            &agent.query_session(&offline, &id(i), &question),
        );
    }
    model_requests(&agent, corpus, &paths, &mut check);
    // The store holds every session (the searches updated it); its raw bytes.
    let store = dir.join("sessions-index/index.sqlite");
    let mut bytes = std::fs::read(&store).unwrap();
    bytes.extend(std::fs::read(store.with_extension("sqlite-wal")).unwrap_or_default());
    let raw = String::from_utf8_lossy(&bytes);
    for p in corpus {
        check("index.sqlite + WAL bytes", p, &raw);
    }
    found
}

/// What a model is sent: each session indexed through a mock provider (the
/// OpenAI wire) and asked about by `query_session`; each request's body is
/// checked against the secret planted in the session it was about.
fn model_requests(
    agent: &Agent,
    corpus: &[Planted],
    paths: &[PathBuf],
    check: &mut impl FnMut(&'static str, &Planted, &str),
) {
    let mock = MockProvider::start(Wire::OpenAi);
    let mut provider = mock.provider_config();
    provider["noApiKey"] = json!(true);
    let config = json!({"modelKeys": ["mock/gpt-test"], "providers": {"mock": provider},
        "useHostModels": false, "timeoutMs": 30000, "query": {"maxCallsPerTurn": 1000}});
    let (services, _) = agent.services("/elsewhere", &config.to_string());
    for (i, (p, path)) in corpus.iter().zip(paths).enumerate() {
        mock.push(Reply::answer_json(&json!({
            "name": "Vault setup", "description": "Set up the vault.",
            "summary": "## Goal\nVault\n## Outcome\nDone", "tags": ["vault", "ops", "setup"],
            "decisions": [], "openTasks": []
        })));
        let request = IndexRequest {
            session_file: path.clone(),
            meta_dir: agent.meta_dir(),
            leaf_id: None,
            force: true,
            offline: false,
            replace: session_index::store::meta::Replace::Any,
            past_cap: false,
        };
        let indexed = index_session(&services.model_env(), &request, &|| {});
        assert!(
            matches!(indexed, Ok(IndexOutcome::Indexed(_))),
            "{indexed:?}"
        );
        mock.push(Reply::answer_json(&json!({
            "answerMarkdown": "It was set.", "confidence": "low", "citations": []
        })));
        let question = format!("What password or key was used in {}?", marker(i));
        agent.query_session(&services, &id(i), &question);
        let sent = mock.requests();
        let [.., index, query] = sent.as_slice() else {
            panic!("session {i}: {} requests", sent.len())
        };
        check("model request (indexing)", p, &index.body);
        check("model request (query_session)", p, &query.body);
    }
}

/// The formats whose fragments survive the redaction pass itself.
fn rule_leaks(corpus: &[Planted]) -> BTreeSet<String> {
    corpus
        .iter()
        .filter(|p| leaks(p, &session_index::redact::session_text(&p.text)))
        .map(|p| p.format.clone())
        .collect()
}

fn report(name: &str, corpus: &[Planted], found: &BTreeMap<&'static str, BTreeSet<String>>) {
    eprintln!(
        "{name}: {} formats; the redaction pass itself misses {:?}",
        corpus.len(),
        rule_leaks(corpus)
    );
    for (path, formats) in found {
        eprintln!("  {path:<32} {:>2} leaked {formats:?}", formats.len());
    }
}

#[test]
fn no_tuned_secret_reaches_any_output_path() {
    let corpus = corpus(&TUNED);
    assert!(corpus.len() >= 45);
    assert_eq!(rule_leaks(&corpus), BTreeSet::new());
    let found = measure(&corpus);
    report("tuned", &corpus, &found);
    assert!(found.len() >= 8, "every path was measured: {found:?}");
    let leaked: BTreeMap<_, _> = found.iter().filter(|(_, f)| !f.is_empty()).collect();
    assert!(leaked.is_empty(), "{leaked:#?}");
}

#[test]
fn held_out_secrets_leak_only_where_the_rules_miss_them() {
    let corpus = corpus(&HELD_OUT);
    let missed = rule_leaks(&corpus);
    let found = measure(&corpus);
    report("held out", &corpus, &found);
    let beyond: BTreeMap<_, Vec<_>> = found
        .iter()
        .map(|(path, f)| (path, f.difference(&missed).collect()))
        .filter(|(_, f): &(_, Vec<_>)| !f.is_empty())
        .collect();
    assert!(
        beyond.is_empty(),
        "paths that skipped the pass: {beyond:#?}"
    );
}
