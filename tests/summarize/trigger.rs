//! When indexing happens (agent_end threshold, lastIndexedLeafId across
//! branches, ephemeral sessions, invalid config) and what a re-index keeps,
//! with the offline model on real pi sessions.

use std::time::Duration;

use crate::support::summarize::*;
use serde_json::{json, Value};
use session_index::plugin::host::Effect;

fn offline(extra: Value) -> Value {
    let mut config = json!({"modelKeys": ["local/extractive"], "useHostModels": false});
    for (k, v) in extra.as_object().unwrap() {
        config[k] = v.clone();
    }
    config
}

fn first_user_message_id(f: &Fixture) -> String {
    let text = std::fs::read_to_string(&f.session_file).unwrap();
    text.lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|e| e["type"] == "message" && e["message"]["role"] == "user")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn agent_end_indexes_only_from_the_threshold_on() {
    let f = Fixture::new(RATE_LIMITER, offline(json!({"minNewUserMessages": 6})));
    f.agent_end();
    assert!(
        f.effects().is_empty(),
        "5 user messages < 6: {:?}",
        f.effects()
    );
    assert!(!f.meta_file().exists());

    let f = Fixture::new(RATE_LIMITER, offline(json!({"minNewUserMessages": 3})));
    f.agent_end();
    let meta = f.meta().expect("indexed at 5 ≥ 3 user messages");
    assert_eq!(meta.model, "local/extractive");
    assert_eq!(
        meta.last_indexed_leaf_id.as_deref(),
        Some(RATE_LIMITER_LEAF)
    );
    assert_eq!(f.index_entries().len(), 1);
    assert_eq!(f.index_entries()[0]["success"], true);

    f.clear_effects();
    f.agent_end();
    assert!(f.effects().is_empty(), "nothing new: {:?}", f.effects());
    f.append_turns(None, 2, "eviction");
    f.agent_end();
    assert!(f.effects().is_empty(), "2 new < 3: {:?}", f.effects());
    let leaf = f.append_turns(None, 1, "eviction");
    f.agent_end();
    assert_eq!(f.index_entries().len(), 1, "3 new ≥ 3");
    assert_eq!(
        f.meta().unwrap().last_indexed_leaf_id.as_deref(),
        Some(leaf.as_str())
    );
}

#[test]
fn last_indexed_leaf_off_the_branch_counts_the_whole_branch() {
    let f = Fixture::new(RATE_LIMITER, offline(json!({"minNewUserMessages": 3})));
    assert!(f.command().ok);
    assert_eq!(
        f.meta().unwrap().last_indexed_leaf_id.as_deref(),
        Some(RATE_LIMITER_LEAF)
    );

    // A second branch forks after the first user message: 1 + 2 user messages on it.
    let fork = f.append_turns(Some(&first_user_message_id(&f)), 2, "fixed window instead");
    f.set_leaf(Some(&fork));
    f.clear_effects();
    f.agent_end();
    assert_eq!(
        f.index_entries().len(),
        1,
        "the whole branch (3 user messages) counts"
    );
    let meta = f.meta().unwrap();
    assert_eq!(meta.last_indexed_leaf_id.as_deref(), Some(fork.as_str()));
    assert!(
        meta.summary.contains("fixed window instead"),
        "{}",
        meta.summary
    );

    // Back on the first branch the fork's leaf is not an ancestor: whole branch again (5).
    f.set_leaf(Some(RATE_LIMITER_LEAF));
    f.clear_effects();
    f.agent_end();
    assert_eq!(f.index_entries().len(), 1);
    assert_eq!(
        f.meta().unwrap().last_indexed_leaf_id.as_deref(),
        Some(RATE_LIMITER_LEAF)
    );

    // Continuing on that branch counts only what follows the indexed leaf.
    let next = f.append_turns(Some(RATE_LIMITER_LEAF), 1, "one more");
    f.set_leaf(Some(&next));
    f.clear_effects();
    f.agent_end();
    assert!(f.effects().is_empty(), "1 new < 3: {:?}", f.effects());
}

#[test]
fn ephemeral_sessions_invalid_config_and_auto_off_do_nothing() {
    let f = Fixture::new(RATE_LIMITER, offline(json!({"minNewUserMessages": 1})));
    let mut ctx = f.ctx();
    ctx.session_file = None;
    session_index::features::summarize::on_agent_end(&f.services, &ctx);
    assert!(f.services.jobs.flush(Duration::from_secs(10)).idle);
    assert!(f.effects().is_empty());

    // A bad key guarding privacy keeps indexing off (its default would read excluded sessions).
    let f = Fixture::new(
        RATE_LIMITER,
        json!({"privacy": {"exclude": [""]}, "bogus": true}),
    );
    assert!(!f.services.config_ok());
    f.agent_end();
    assert!(
        f.effects()
            .iter()
            .all(|e| matches!(e, Effect::Notify { .. })),
        "{:?}",
        f.effects()
    );
    assert!(!f.meta_file().exists());
    let result = f.command();
    assert!(!result.ok);
    assert!(result.message.unwrap().contains("config is invalid"));
    assert!(!f.meta_file().exists());

    let f = Fixture::new(
        RATE_LIMITER,
        offline(json!({"minNewUserMessages": 1, "indexing": {"auto": false}})),
    );
    f.agent_end();
    assert!(f.effects().is_empty());
    assert!(f.command().ok, "the command still indexes");
    assert!(f.meta().is_some());
}

#[test]
fn a_typo_in_one_key_leaves_the_rest_of_the_config_working() {
    let f = Fixture::new(
        RATE_LIMITER,
        offline(
            json!({"minNewUserMessages": 1, "bogus": true, "indexing": {"maxOutputTokens": "many"}}),
        ),
    );
    assert!(f.services.config_ok(), "{:?}", f.services.config_problems);
    assert_eq!(
        f.services.config_problems,
        [
            "bogus: unknown key, ignored",
            "indexing.maxOutputTokens: expected an integer, got \"many\"; its default applies",
        ]
    );
    assert_eq!(
        f.services.config.min_new_user_messages, 1,
        "the rest applies"
    );
    assert!(f.command().ok, "indexing stays on");
    assert!(f.meta().is_some());
}

#[test]
fn reindex_keeps_created_at_and_unknown_fields() {
    let f = Fixture::new(JWT, offline(json!({})));
    assert!(f.command().ok);
    let first = f.meta().unwrap();
    assert_eq!(
        first.name, "JWT expiry and refresh tokens",
        "the session_info name is used"
    );
    assert!(
        !f.effects()
            .iter()
            .any(|e| matches!(e, Effect::SetSessionName { .. })),
        "the session already has this name"
    );
    assert!(
        first.tags.contains(&"issue:#87".to_string())
            && first.tags.contains(&"pr:acme/gateway#91".to_string())
    );

    // Another tool's field survives a re-index.
    let mut doc: Value =
        serde_json::from_str(&std::fs::read_to_string(f.meta_file()).unwrap()).unwrap();
    doc["pinned"] = json!(true);
    std::fs::write(f.meta_file(), doc.to_string()).unwrap();
    std::thread::sleep(Duration::from_millis(5));
    f.append_turns(None, 1, "docs");
    assert!(f.command().ok);
    let second = f.meta().unwrap();
    assert_eq!(second.created_at, first.created_at);
    assert_ne!(second.updated_at, first.updated_at);
    assert_eq!(second.extra.get("pinned"), Some(&json!(true)));
}

#[test]
fn corrupt_meta_is_replaced_on_the_next_index() {
    for corrupt in [
        "{\"schemaVersion\":1,\"sessionId\":\"x\",",
        "[]",
        "{\"schemaVersion\":0,\"sessionId\":\"a\"}",
    ] {
        let f = Fixture::new(FLAKY_CI, offline(json!({})));
        std::fs::create_dir_all(f.meta_dir()).unwrap();
        std::fs::write(f.meta_file(), corrupt).unwrap();
        assert!(session_index::store::meta::read(&f.meta_dir(), &f.session_id).is_err());
        assert!(f.command().ok);
        let meta = f.meta().expect("replaced by a valid document");
        assert!(
            meta.tags.contains(&"ticket:OPS-7".to_string()),
            "{:?}",
            meta.tags
        );
        assert!(f.effects().contains(&Effect::SetSessionName {
            name: meta.name.clone()
        }));
    }
}

#[test]
fn a_meta_file_of_a_newer_schema_is_never_overwritten() {
    let newer = [
        r#"{"schemaVersion":2,"sessionId":"a","sessionFile":"","name":"Mine","description":"","summary":"","createdAt":"","updatedAt":"","later":1}"#,
        r#"{"schemaVersion":3,"sessionId":"a","name":{"text":"Mine"}}"#,
    ];
    for text in newer {
        let f = Fixture::new(FLAKY_CI, offline(json!({"minNewUserMessages": 1})));
        std::fs::create_dir_all(f.meta_dir()).unwrap();
        std::fs::write(f.meta_file(), text).unwrap();
        let result = f.command();
        assert!(!result.ok, "{result:?}");
        assert!(result
            .message
            .unwrap_or_default()
            .contains("is newer than this session-index understands"));
        assert_eq!(
            std::fs::read_to_string(f.meta_file()).unwrap(),
            text,
            "left untouched"
        );
        // agent_end leaves it alone quietly: no failure entry in the session, every turn.
        let before = f.effects().len();
        f.agent_end();
        assert_eq!(f.effects().len(), before, "{:?}", &f.effects()[before..]);
        assert_eq!(std::fs::read_to_string(f.meta_file()).unwrap(), text);
    }
}

#[test]
fn a_stale_status_clear_never_hides_a_newer_status() {
    let f = Fixture::new(
        RATE_LIMITER,
        offline(json!({"notificationAutoClearMs": 600})),
    );
    let first = f.command();
    assert!(first.ok);
    let message = first.message.unwrap_or_default();
    assert!(
        message.ends_with("(local/extractive, offline)"),
        "no cost shown for the offline model: {message}"
    );
    std::thread::sleep(Duration::from_millis(500));
    assert!(f.command().ok);
    // The first clear (due ~100 ms after the second run) is stale and must not fire.
    std::thread::sleep(Duration::from_millis(300));
    let statuses = f.statuses();
    assert_eq!(
        statuses.iter().filter(|s| s.is_none()).count(),
        0,
        "{statuses:?}"
    );
    assert_eq!(
        statuses.last().unwrap().as_deref(),
        Some("indexed (offline)")
    );
    std::thread::sleep(Duration::from_millis(800));
    assert_eq!(
        f.statuses().last().unwrap(),
        &None,
        "the newest status is cleared after notificationAutoClearMs"
    );
}

#[test]
fn an_unknown_leaf_fails_with_a_reason_and_writes_nothing() {
    let f = Fixture::new(RATE_LIMITER, offline(json!({})));
    f.set_leaf(Some("deadbeef"));
    let result = f.command();
    assert!(!result.ok);
    assert!(result.message.unwrap().contains("no entry \"deadbeef\""));
    assert!(!f.meta_file().exists());
    assert_eq!(f.index_entries()[0]["success"], false);
}
