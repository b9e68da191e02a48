//! Indexing a real pi session through `/index-session` against mock providers
//! over loopback HTTP, in each provider's wire format: the meta file written
//! (or not) and every host effect.

use std::time::{Duration, Instant};

use crate::support::mock_provider::{MockProvider, Reply, Wire};
use crate::support::summarize::*;
use serde_json::{json, Value};
use session_index::plugin::host::Effect;

const KEY: &str = "sk-test-key-0123456789abcdef";

fn config(mock: &MockProvider, model_key: &str, extra: Value) -> Value {
    let provider = model_key.split_once('/').unwrap().0;
    let mut config = json!({
        "modelKeys": [model_key],
        "providers": {provider: mock.provider_config()},
        "useHostModels": false,
        "offlineFallback": false,
        "timeoutMs": 30000,
        "prices": {model_key: {"inputPerMtok": 1.0, "outputPerMtok": 2.0}},
    });
    for (k, v) in extra.as_object().unwrap() {
        config[k] = v.clone();
    }
    config
}

fn fixture(mock: &MockProvider, model_key: &str, extra: Value) -> Fixture {
    let provider = model_key.split_once('/').unwrap().0;
    let f = Fixture::with_keys(
        RATE_LIMITER,
        config(mock, model_key, extra),
        &[(provider, KEY)],
    );
    assert!(f.services.config_ok(), "{:?}", f.services.config_problems);
    f
}

fn happy_path(wire: Wire, model_key: &str) {
    let mock = MockProvider::start(wire);
    mock.push(
        Reply::answer_json(&answer("Token bucket rate limiter for the gateway")).usage(1200, 80),
    );
    let f = fixture(&mock, model_key, json!({}));

    let result = f.command();
    assert!(result.ok, "{result:?}");

    let meta = f.meta().expect("meta file written");
    assert_eq!(meta.schema_version, 1);
    assert_eq!(meta.session_id, RATE_LIMITER_ID);
    assert_eq!(meta.name, "Token bucket rate limiter for the gateway");
    assert_eq!(meta.model, model_key);
    assert_eq!(
        meta.tags,
        vec!["ticket:GW-142", "rate-limiting", "rust"],
        "entity tags first"
    );
    assert_eq!(meta.cwd, "/home/user/demo");
    assert_eq!(
        meta.last_indexed_leaf_id.as_deref(),
        Some(RATE_LIMITER_LEAF)
    );
    assert_eq!(meta.session_file, f.session_file.to_string_lossy());
    assert_eq!(meta.decisions, vec!["Token bucket per API key"]);
    let usage = meta.usage.clone().unwrap();
    assert_eq!((usage.input_tokens, usage.output_tokens), (1200, 80));
    assert!((usage.cost_usd - 0.00136).abs() < 1e-9, "{usage:?}");
    let files = meta.files.clone().unwrap();
    assert_eq!(
        files.modified,
        vec!["src/gateway.rs", "src/limiter.rs", "tests/limiter_test.rs"]
    );

    // One request, in the wire's format, carrying the conversation but no tools.
    let requests = mock.requests();
    assert_eq!(requests.len(), 1);
    let sent = requests[0].texts();
    assert!(sent.contains("<conversation>"), "{sent}");
    assert!(
        sent.contains("Add per-client rate limiting to the API gateway for GW-142"),
        "{sent}"
    );
    assert!(requests[0].json.get("tools").is_none(), "no tools are sent");
    assert!(
        !requests[0].body.contains(KEY),
        "the key never goes into a body"
    );

    // Host effects, in order.
    let effects = f.effects();
    let status = |text: &str| Effect::SetStatus {
        key: "session-index".into(),
        text: Some(text.into()),
    };
    assert_eq!(effects[0], status("indexing…"));
    assert!(
        effects.contains(&Effect::SetSessionName {
            name: meta.name.clone()
        }),
        "{effects:?}"
    );
    let shown = format!("indexed ($0.0014 by {}: configured key)", meta.model);
    assert!(effects.contains(&status(&shown)), "{effects:?}");
    assert_eq!(
        meta.model_choice.clone().map(String::from).as_deref(),
        Some("configured"),
        "why the model, in the meta file"
    );
    let entries = f.index_entries();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0]["success"], true);
    assert_eq!(entries[0]["sessionId"], RATE_LIMITER_ID);
    assert_eq!(entries[0]["model"], model_key);
    assert_eq!(entries[0]["usage"]["inputTokens"], 1200);
    assert!(entries[0]["timestamp"].as_str().unwrap().ends_with('Z'));
    assert!(entries[0].get("error").is_none());
    assert!(effects
        .iter()
        .any(|e| matches!(e, Effect::Notify { text, .. } if text.starts_with("Indexed: "))));
}

#[test]
fn happy_path_openai() {
    happy_path(Wire::OpenAi, "openai/gpt-4.1-mini");
}

#[test]
fn happy_path_anthropic() {
    happy_path(Wire::Anthropic, "anthropic/claude-haiku-4-5");
}

#[test]
fn happy_path_gemini() {
    happy_path(Wire::Gemini, "google/gemini-2.5-flash");
}

#[test]
fn malformed_json_then_valid_is_retried_with_the_error() {
    let mock = MockProvider::start(Wire::OpenAi);
    mock.push(Reply::answer("{\"name\": \"Token bucket"));
    mock.push(Reply::answer_json(&answer("Second answer wins here")));
    let f = fixture(&mock, "openai/gpt-4.1-mini", json!({}));
    assert!(f.command().ok);
    assert_eq!(f.meta().unwrap().name, "Second answer wins here");
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    assert!(
        requests[1].texts().contains("not valid JSON"),
        "{}",
        requests[1].texts()
    );
    assert_eq!(f.index_entries().len(), 1);
}

#[test]
fn schema_invalid_then_valid_is_retried() {
    let mock = MockProvider::start(Wire::Anthropic);
    let mut two_tags = answer("Only two tags here sadly");
    two_tags["tags"] = json!(["a", "b"]);
    mock.push(Reply::answer_json(&two_tags));
    mock.push(Reply::answer_json(&answer("Fixed answer with three tags")));
    let f = fixture(&mock, "anthropic/claude-haiku-4-5", json!({}));
    assert!(f.command().ok);
    assert_eq!(f.meta().unwrap().name, "Fixed answer with three tags");
    assert!(
        mock.requests()[1].texts().contains("tags"),
        "the validation error names the field"
    );
}

#[test]
fn three_invalid_answers_record_a_failure_and_write_no_meta() {
    let mock = MockProvider::start(Wire::Gemini);
    let mut long_name = answer("x");
    long_name["name"] = json!("word ".repeat(40));
    mock.push(Reply::answer("not json at all"));
    mock.push(Reply::answer_json(&long_name));
    mock.push(Reply::answer("{}"));
    mock.push(Reply::answer_json(&answer("Never requested")));
    let f = fixture(&mock, "google/gemini-2.5-flash", json!({}));

    let result = f.command();
    assert!(!result.ok);
    assert!(result.message.unwrap().contains("invalid after 3 attempts"));
    assert_eq!(mock.requests().len(), 3);
    assert_eq!(mock.pending(), 1);
    assert!(!f.meta_file().exists(), "no meta file after a failed index");
    let entries = f.index_entries();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0]["success"], false);
    assert_eq!(entries[0]["model"], "google/gemini-2.5-flash");
    assert_eq!(entries[0]["sessionId"], RATE_LIMITER_ID);
    assert!(entries[0]["error"].as_str().unwrap().contains("invalid"));
    assert!(!f
        .effects()
        .iter()
        .any(|e| matches!(e, Effect::SetSessionName { .. })));
    let last_status = f.statuses().last().cloned().flatten().unwrap();
    assert!(last_status.starts_with("index failed: "), "{last_status}");
}

#[test]
fn server_error_is_not_retried() {
    let mock = MockProvider::start(Wire::OpenAi);
    mock.push(Reply::error(500, "internal error"));
    mock.push(Reply::answer_json(&answer("Should not be used")));
    let f = fixture(&mock, "openai/gpt-4.1-mini", json!({}));
    assert!(!f.command().ok);
    assert_eq!(mock.requests().len(), 1);
    assert!(!f.meta_file().exists());
    let entries = f.index_entries();
    assert_eq!(entries[0]["success"], false);
    assert!(
        entries[0]["error"].as_str().unwrap().contains("500"),
        "{}",
        entries[0]
    );
}

#[test]
fn rate_limited_request_is_retried_once_after_retry_after() {
    let mock = MockProvider::start(Wire::Anthropic);
    mock.push(Reply::error(429, "slow down").header("retry-after", "1"));
    mock.push(Reply::answer_json(&answer("Indexed after the rate limit")));
    let f = fixture(&mock, "anthropic/claude-haiku-4-5", json!({}));
    let start = Instant::now();
    assert!(f.command().ok);
    assert!(
        start.elapsed() >= Duration::from_millis(900),
        "Retry-After was honoured"
    );
    assert_eq!(mock.requests().len(), 2);
    assert_eq!(f.meta().unwrap().name, "Indexed after the rate limit");
}

#[test]
fn timeout_fails_cleanly() {
    let mock = MockProvider::start(Wire::OpenAi);
    mock.push(Reply::answer_json(&answer("Too late to matter")).delay(Duration::from_secs(5)));
    let f = fixture(&mock, "openai/gpt-4.1-mini", json!({"timeoutMs": 400}));
    let start = Instant::now();
    let result = f.command();
    assert!(!result.ok);
    assert!(
        start.elapsed() < Duration::from_secs(4),
        "the timeout cut the request"
    );
    assert!(result.message.unwrap().contains("timed out"));
    assert!(!f.meta_file().exists());
    assert_eq!(f.index_entries()[0]["success"], false);
}

#[test]
fn oversized_response_is_rejected() {
    let mock = MockProvider::start(Wire::Gemini);
    mock.push(Reply::oversized(4 * 1024 * 1024, false));
    let f = fixture(
        &mock,
        "google/gemini-2.5-flash",
        json!({"maxResponseBytes": 65536}),
    );
    let result = f.command();
    assert!(!result.ok);
    assert!(result.message.unwrap().contains("larger than 65536 bytes"));
    assert!(!f.meta_file().exists());
    assert_eq!(f.index_entries()[0]["success"], false);
}

#[test]
fn reindex_is_incremental_and_keeps_created_at() {
    let mock = MockProvider::start(Wire::OpenAi);
    mock.push(Reply::answer_json(&answer("First index of the session")));
    mock.push(Reply::answer_json(&answer("Second index of the session")));
    let f = fixture(&mock, "openai/gpt-4.1-mini", json!({}));
    assert!(f.command().ok);
    let first = f.meta().unwrap();

    std::thread::sleep(Duration::from_millis(5));
    let leaf = f.append_turns(None, 2, "configurable limits");
    assert!(f.command().ok);
    let second = f.meta().unwrap();
    assert_eq!(second.created_at, first.created_at, "createdAt is kept");
    assert_ne!(second.updated_at, first.updated_at);
    assert_eq!(second.last_indexed_leaf_id.as_deref(), Some(leaf.as_str()));
    assert_eq!(second.name, "Second index of the session");

    let requests = mock.requests();
    let (full, incremental) = (requests[0].texts(), requests[1].texts());
    assert!(full.contains("<conversation>"));
    assert!(incremental.contains("<previous-index>"), "{incremental}");
    assert!(
        incremental.contains("First index of the session"),
        "the previous index is sent"
    );
    assert!(
        incremental.contains("configurable limits: step 1"),
        "new messages are sent"
    );
    assert!(
        !incremental.contains("Add per-client rate limiting to the API gateway for GW-142"),
        "old ones are not"
    );
}

#[test]
fn no_model_and_no_offline_fallback_fails_with_a_reason() {
    let f = Fixture::new(
        RATE_LIMITER,
        json!({"modelKeys": ["openai/gpt-4.1-mini"], "offlineFallback": false,
        "useHostModels": false, "providers": {"openai": {"apiKeyEnv": "SESSION_INDEX_TEST_UNSET_KEY"}}}),
    );
    let result = f.command();
    assert!(!result.ok);
    let message = result.message.unwrap();
    assert!(message.contains("offline model is turned off"), "{message}");
    assert!(!f.meta_file().exists());
    assert_eq!(f.index_entries()[0]["success"], false);
}

#[test]
fn a_command_during_a_background_index_waits_for_it() {
    let mock = MockProvider::start(Wire::OpenAi);
    let name = "Token bucket rate limiter for the gateway";
    // The background run's answer is slow, so the command arrives while it waits on the model.
    mock.push(
        Reply::answer_json(&answer(name))
            .usage(100, 10)
            .delay(Duration::from_millis(800)),
    );
    mock.push(Reply::answer_json(&answer(name)).usage(50, 5));
    let f = fixture(
        &mock,
        "openai/gpt-4o-mini",
        json!({"minNewUserMessages": 3}),
    );

    session_index::features::summarize::on_agent_end(&f.services, &f.ctx());
    let deadline = Instant::now() + Duration::from_secs(10);
    while mock.requests().is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(
        mock.requests().len(),
        1,
        "the background run is waiting on the model"
    );
    let result = f.command();
    assert!(result.ok, "{result:?}");
    assert!(f.services.jobs.flush(Duration::from_secs(10)).idle);

    // One run after the other: their effects do not interleave.
    let shown: Vec<String> = f.statuses().into_iter().flatten().collect();
    let done = "indexed ($0.0001 by openai/gpt-4o-mini: configured key)";
    assert_eq!(shown, ["indexing…", done, "indexing…", done], "{shown:?}");
    let entries = f.index_entries();
    assert_eq!(entries.len(), 2);
    assert!(entries.iter().all(|e| e["success"] == true), "{entries:?}");
    assert_eq!(mock.requests().len(), 2);
}
