//! `query_session` as a tool: arguments, the per-run call limit, every error
//! code, offline answers with correct entry ids, model answers through a mock
//! OpenAI-compatible provider over loopback, telemetry and the status line.

use std::sync::Arc;
use std::time::Duration;

use crate::support::mock_provider::{MockProvider, Reply, Wire};
use crate::support::synth::{appended, Agent, Synth};
use pi_ext_abi::protocol::{EventCall, ToolCall, ToolResult};
use serde_json::{json, Value};
use session_index::plugin::host::Effect;
use session_index::plugin::router::SessionIndexPlugin;
use session_index::plugin::state::Services;

const OFFLINE: &str = r#"{"modelKeys":["local/extractive"]}"#;
const BRANCH: &str = "generated/branch-summary-2026-11-22T01-22-32-496Z.jsonl";
const BRANCH_ID: &str = "01a200d9-05af-72e1-a418-11f8875a7958";
const TOOLS: &str = "generated/tools-compaction-2026-11-22T01-22-31-354Z.jsonl";
const TOOLS_ID: &str = "01a200d9-013a-7380-b9a2-8976428e929c";
/// Entries of branch-summary that exist only on its abandoned branch.
const ABANDONED: &[&str] = &["68cd183e", "076a9a87", "5044597e", "d7787b63"];

fn call(services: &Arc<Services>, agent: &Agent, params: Value) -> ToolResult {
    let call = ToolCall {
        v: 1,
        tool: "query_session".into(),
        tool_call_id: "t1".into(),
        params,
        ctx: agent.ctx("/somewhere/else"),
    };
    session_index::features::query::call_tool(services, &call)
}

fn text(result: &ToolResult) -> String {
    result
        .content
        .iter()
        .map(|c| match c {
            pi_ext_abi::protocol::ContentPart::Text { text } => text.clone(),
        })
        .collect()
}

fn code(result: &ToolResult) -> String {
    assert!(result.is_error, "expected an error, got {}", text(result));
    result.details["code"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn ask(session: &str, question: &str) -> Value {
    json!({"session": session, "question": question})
}

fn mock_config(mock: &MockProvider, extra: Value) -> String {
    let mut provider = mock.provider_config();
    provider["noApiKey"] = json!(true);
    let mut config = json!({
        "modelKeys": ["mock/gpt-test"],
        "providers": {"mock": provider},
        "useHostModels": false,
        "timeoutMs": 30000,
        "prices": {"mock/gpt-test": {"inputPerMtok": 1.0, "outputPerMtok": 2.0}},
    });
    for (k, v) in extra.as_object().into_iter().flatten() {
        config[k] = v.clone();
    }
    config.to_string()
}

#[test]
fn tool_spec_is_strict_and_names_itself() {
    let spec = session_index::features::query::tool_spec();
    assert_eq!(spec.name, "query_session");
    assert_eq!(spec.parameters["additionalProperties"], json!(false));
    assert_eq!(spec.parameters["required"], json!(["session", "question"]));
    assert!(spec
        .prompt_snippet
        .as_deref()
        .unwrap_or_default()
        .contains("query_session"));
    assert!(!spec.prompt_guidelines.is_empty());
    assert!(spec
        .prompt_guidelines
        .iter()
        .all(|g| g.contains("query_session")));
}

#[test]
fn invalid_arguments_are_tool_errors() {
    let agent = Agent::new();
    let (services, _) = agent.services("/p", OFFLINE);
    for params in [
        json!({"session": "abc"}),
        json!({"question": "q?"}),
        json!({"session": "abc", "question": "q?", "extra": 1}),
        json!({"session": "  ", "question": "q?"}),
        json!({"session": "abc", "question": ""}),
        json!({"session": 5, "question": "q?"}),
        json!("not an object"),
        json!({"session": "abc", "question": "x".repeat(5000)}),
    ] {
        let result = call(&services, &agent, params.clone());
        assert_eq!(code(&result), "INVALID_ARGS", "{params}");
    }
    // Invalid calls do not use up the per-run allowance.
    agent.copy_fixture(TOOLS);
    assert!(!call(&services, &agent, ask(TOOLS_ID, "What JWT lifetime?")).is_error);
}

#[test]
fn offline_answer_cites_the_right_entries_and_reports() {
    let agent = Agent::new();
    agent.copy_fixture(TOOLS);
    let (services, rec) = agent.services("/p", OFFLINE);
    let result = call(
        &services,
        &agent,
        ask(&TOOLS_ID[..13], "What JWT lifetime did we decide on?"),
    );
    assert!(!result.is_error, "{}", text(&result));
    let d = &result.details;
    assert_eq!(d["sessionId"], TOOLS_ID);
    assert_eq!(d["model"], "local/extractive");
    assert_eq!(d["offline"], true);
    assert_eq!(d["costUsd"], 0.0);
    assert!(d["contextTokens"].as_u64().unwrap() > 0);
    let in_context: Vec<&str> = d["contextEntryIds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(
        in_context.contains(&"05aaa15d") && in_context.contains(&"88cd5147"),
        "{in_context:?}"
    );
    assert!(d["latencyMs"].is_u64());
    assert!(d["usage"].is_object());
    assert!(d["answer"].as_str().unwrap().contains("No model was used"));
    let cited: Vec<&str> = d["citations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["entryId"].as_str().unwrap())
        .collect();
    assert!(cited.contains(&"05aaa15d"), "{cited:?}");
    for c in d["citations"].as_array().unwrap() {
        assert!(c["excerpt"].as_str().unwrap().chars().count() <= 280);
    }
    let body = text(&result);
    assert!(
        body.contains(TOOLS_ID) && body.contains("confidence:"),
        "{body}"
    );

    let telemetry = appended(&rec, "session-query:query");
    assert_eq!(telemetry.len(), 1);
    assert_eq!(telemetry[0]["success"], true);
    assert_eq!(telemetry[0]["sessionId"], TOOLS_ID);
    let status: Vec<_> = rec
        .effects()
        .into_iter()
        .filter_map(|e| match e {
            Effect::SetStatus { key, text: Some(t) } if key == "session-index" => Some(t),
            _ => None,
        })
        .collect();
    assert!(status.iter().any(|s| s.contains("$0.0000")), "{status:?}");
}

#[test]
fn call_limit_applies_per_agent_run_and_resets() {
    let agent = Agent::new();
    agent.copy_fixture(TOOLS);
    let (services, rec) = agent.services(
        "/p",
        r#"{"modelKeys":["local/extractive"],"query":{"maxCallsPerTurn":2}}"#,
    );
    let plugin = SessionIndexPlugin::new(services.clone());
    for _ in 0..2 {
        assert!(!call(&services, &agent, ask(TOOLS_ID, "limiter?")).is_error);
    }
    let third = call(&services, &agent, ask(TOOLS_ID, "limiter?"));
    assert_eq!(code(&third), "CALL_LIMIT_EXCEEDED");
    assert_eq!(third.details["limit"], 2);
    let failures = appended(&rec, "session-query:query")
        .into_iter()
        .filter(|t| t["success"] == false)
        .count();
    assert_eq!(failures, 1);
    let event = EventCall {
        v: 1,
        event: "before_agent_start".into(),
        payload: json!({"prompt": "next turn", "systemPrompt": ""}),
        ctx: agent.ctx("/p"),
    };
    plugin.on_event(event).unwrap();
    assert!(!call(&services, &agent, ask(TOOLS_ID, "limiter?")).is_error);
}

#[test]
fn resolution_errors_have_their_codes() {
    let agent = Agent::new();
    agent.copy_fixture(TOOLS);
    agent.copy_fixture(BRANCH);
    let missing = agent
        .sessions()
        .join("--p--/2026-01-01T00-00-00-000Z_gone-0001.jsonl");
    agent.meta("gone-0001", "Vanished work", "d", &["x"], "s", &missing);
    let (services, _) = agent.services(
        "/p",
        r#"{"modelKeys":["local/extractive"],"query":{"maxCallsPerTurn":10}}"#,
    );
    assert_eq!(
        code(&call(
            &services,
            &agent,
            ask("no-such-session-anywhere", "q?")
        )),
        "SESSION_NOT_FOUND"
    );
    assert_eq!(
        code(&call(&services, &agent, ask("../../etc/passwd", "q?"))),
        "SESSION_NOT_FOUND"
    );
    let ambiguous = call(&services, &agent, ask("01a200d9", "q?"));
    assert_eq!(code(&ambiguous), "SESSION_AMBIGUOUS");
    assert!(
        ambiguous.details["candidates"]
            .as_array()
            .is_some_and(|c| c.len() >= 2),
        "{}",
        ambiguous.details
    );
    assert_eq!(
        code(&call(&services, &agent, ask("gone-0001", "q?"))),
        "SESSION_FILE_MISSING"
    );
}

#[test]
fn empty_and_unparsable_sessions_have_their_codes() {
    let agent = Agent::new();
    let dir = agent.sessions().join("--p--");
    std::fs::create_dir_all(&dir).unwrap();
    let empty = dir.join("2026-01-01T00-00-00-000Z_empty-000001.jsonl");
    std::fs::write(
        &empty,
        concat!(
            r#"{"type":"session","version":3,"id":"empty-000001","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}"#,
            "\n",
            r#"{"type":"model_change","id":"m1","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","provider":"x","modelId":"y"}"#,
            "\n"
        ),
    )
    .unwrap();
    let (services, _) = agent.services(
        "/p",
        r#"{"modelKeys":["local/extractive"],"query":{"maxCallsPerTurn":10}}"#,
    );
    assert_eq!(
        code(&call(&services, &agent, ask("empty-000001", "anything?"))),
        "SESSION_EMPTY"
    );

    // The catalog only lists files with a session header, so a corrupt file
    // reaches the query through an entry resolved before it broke.
    let ctx = agent.ctx("/p");
    let bad = dir.join("2026-01-01T00-00-00-000Z_bad-000001.jsonl");
    std::fs::write(
        &bad,
        "{\"type\":\"session\",\"version\":3,\"id\":\"bad-000001\",\"cwd\":\"/p\"}\n",
    )
    .unwrap();
    let entry = services
        .catalog
        .resolve(&agent.sessions(), &agent.meta_dir(), "/p", "bad-000001")
        .unwrap()
        .entry;
    std::fs::write(
        &bad,
        "<html>not a session</html>\n{\"contact\": \"form\"}\n",
    )
    .unwrap();
    let err = session_index::features::query::answer(&services, &ctx, &entry, "q?").unwrap_err();
    assert_eq!(err.code().to_string(), "SESSION_PARSE_FAILED", "{err}");
    std::fs::remove_file(&bad).unwrap();
    let err = session_index::features::query::answer(&services, &ctx, &entry, "q?").unwrap_err();
    assert_eq!(err.code().to_string(), "SESSION_FILE_MISSING", "{err}");
}

#[test]
fn no_model_without_fallback_is_model_unavailable() {
    let agent = Agent::new();
    agent.copy_fixture(TOOLS);
    let config = json!({
        "modelKeys": ["nokey/some-model"],
        "providers": {"nokey": {"baseUrl": "http://127.0.0.1:9/v1", "apiKeyEnv": "SESSION_INDEX_TEST_UNSET_KEY_7"}},
        "offlineFallback": false,
        "useHostModels": false,
    });
    let (services, _) = agent.services("/p", &config.to_string());
    assert_eq!(
        code(&call(&services, &agent, ask(TOOLS_ID, "q?"))),
        "QUERY_MODEL_UNAVAILABLE"
    );
    // With the fallback on, the same setup answers offline.
    let (services, _) = agent.services(
        "/p",
        &config
            .to_string()
            .replace("\"offlineFallback\":false", "\"offlineFallback\":true"),
    );
    let result = call(&services, &agent, ask(TOOLS_ID, "q?"));
    assert!(!result.is_error, "{}", text(&result));
    assert_eq!(result.details["offline"], true);
}

fn model_answer(entry: &str, excerpt: &str) -> Value {
    json!({
        "answerMarkdown": "The cache uses **LFU** eviction.",
        "confidence": "high",
        "citations": [{"entryId": entry, "role": "user", "excerpt": excerpt}]
    })
}

#[test]
fn model_answer_through_openai_wire_is_validated_and_priced() {
    let mock = MockProvider::start(Wire::OpenAi);
    // First answer cites an abandoned-branch entry: rejected, retried.
    mock.push(
        Reply::answer_json(&model_answer(
            "5044597e",
            "Use LRU eviction with 10k entries",
        ))
        .usage(2000, 100),
    );
    mock.push(
        Reply::answer_json(&model_answer(
            "83ceaa8d",
            "Actually use LFU eviction instead",
        ))
        .usage(2100, 90),
    );
    let agent = Agent::new();
    let path = agent.copy_fixture(BRANCH);
    agent.meta(
        BRANCH_ID,
        "Cache layer design",
        "Designing the cache",
        &["cache"],
        "SUMMARY-MARKER-42: sharded",
        &path,
    );
    let (services, rec) = agent.services("/p", &mock_config(&mock, json!({})));
    let result = call(
        &services,
        &agent,
        ask(BRANCH_ID, "Which eviction policy did we settle on?"),
    );
    assert!(!result.is_error, "{}", text(&result));
    let d = &result.details;
    assert_eq!(d["model"], "mock/gpt-test");
    assert_eq!(d["offline"], false);
    assert_eq!(d["confidence"], "high");
    assert_eq!(d["attempts"], 2);
    assert_eq!(d["citations"][0]["entryId"], "83ceaa8d");
    assert_eq!(d["citations"][0]["role"], "user");
    assert_eq!(d["usage"]["inputTokens"], 4100);
    let expected = (4100.0 * 1.0 + 190.0 * 2.0) / 1e6;
    assert!(
        (d["costUsd"].as_f64().unwrap() - expected).abs() < 1e-12,
        "{}",
        d["costUsd"]
    );
    assert!(text(&result).contains("confidence: high"));

    let sent = mock.requests();
    assert_eq!(sent.len(), 2);
    let first = &sent[0];
    assert_eq!(first.path, "/v1/chat/completions");
    for field in ["tools", "tool_choice", "functions"] {
        assert!(first.json.get(field).is_none(), "{field} sent");
    }
    let prompt = first.texts();
    assert!(
        prompt.contains("[83ceaa8d] user: Actually use LFU eviction instead"),
        "{prompt}"
    );
    assert!(prompt.contains("Which eviction policy did we settle on?"));
    assert!(
        prompt.contains("## Index of the session") && prompt.contains("SUMMARY-MARKER-42"),
        "meta missing"
    );
    assert!(
        prompt.contains("[abd28777] branchSummary:"),
        "branch summary missing"
    );
    for id in ABANDONED {
        assert!(
            !prompt.contains(id),
            "abandoned entry {id} sent to the model"
        );
    }
    assert!(
        !prompt.contains("Use LRU eviction with 10k entries"),
        "abandoned text sent to the model"
    );
    // The schema pins entry ids to those of the context.
    let schema = &first.json["response_format"]["json_schema"]["schema"];
    let ids = &schema["properties"]["citations"]["items"]["properties"]["entryId"]["enum"];
    assert!(
        ids.as_array().unwrap().iter().any(|v| v == "83ceaa8d"),
        "{schema}"
    );
    assert!(
        sent[1].texts().contains("not in the excerpts"),
        "retry did not explain the error"
    );

    let telemetry = appended(&rec, "session-query:query");
    assert_eq!(telemetry[0]["model"], "mock/gpt-test");
    assert!(telemetry[0]["costUsd"].as_f64().unwrap() > 0.0);
}

#[test]
fn invalid_model_output_after_retries_is_query_invalid_output() {
    let mock = MockProvider::start(Wire::OpenAi);
    for _ in 0..3 {
        mock.push(Reply::answer_json(&model_answer("deadbeef", "made up")));
    }
    let agent = Agent::new();
    agent.copy_fixture(BRANCH);
    let (services, _) = agent.services("/p", &mock_config(&mock, json!({})));
    let result = call(&services, &agent, ask(BRANCH_ID, "Which eviction policy?"));
    assert_eq!(code(&result), "QUERY_INVALID_OUTPUT");
    assert_eq!(mock.requests().len(), 3);
}

#[test]
fn transport_failures_and_timeouts_are_query_transport_failed() {
    let mock = MockProvider::start(Wire::OpenAi);
    mock.push(Reply::error(500, "upstream exploded"));
    let agent = Agent::new();
    agent.copy_fixture(BRANCH);
    let (services, _) = agent.services(
        "/p",
        &mock_config(&mock, json!({"query": {"maxCallsPerTurn": 5}})),
    );
    let result = call(&services, &agent, ask(BRANCH_ID, "Which eviction policy?"));
    assert_eq!(code(&result), "QUERY_TRANSPORT_FAILED");

    let slow = MockProvider::start(Wire::OpenAi);
    slow.push(Reply::answer_json(&model_answer("83ceaa8d", "x")).delay(Duration::from_secs(3)));
    let (services, _) = agent.services("/p", &mock_config(&slow, json!({"timeoutMs": 300})));
    let result = call(&services, &agent, ask(BRANCH_ID, "Which eviction policy?"));
    assert_eq!(code(&result), "QUERY_TRANSPORT_FAILED");
    assert!(text(&result).contains("timed out"), "{}", text(&result));

    // Nothing listening at all.
    let (services, _) = agent.services(
        "/p",
        &json!({
            "modelKeys": ["dead/m"],
            "providers": {"dead": {"baseUrl": "http://127.0.0.1:9/v1", "noApiKey": true}},
            "useHostModels": false,
        })
        .to_string(),
    );
    assert_eq!(
        code(&call(&services, &agent, ask(BRANCH_ID, "q?"))),
        "QUERY_TRANSPORT_FAILED"
    );
}

#[test]
fn at_reference_answers_use_the_same_machinery() {
    let agent = Agent::new();
    agent.session(&Synth::new("ref-000001", "/p").name("Billing work").user(&[
        "Set up the billing service",
        "We settled on Paddle for payments, not Stripe",
    ]));
    let (services, _) = agent.services("/p", OFFLINE);
    let ctx = agent.ctx("/p");
    let entry = services
        .catalog
        .resolve(&agent.sessions(), &agent.meta_dir(), "/p", "Billing work")
        .unwrap()
        .entry;
    let answer = session_index::features::query::answer(
        &services,
        &ctx,
        &entry,
        "Which payment provider did we pick?",
    )
    .unwrap();
    assert_eq!(answer.name, "Billing work");
    assert!(answer.offline);
    assert!(
        answer
            .citations
            .iter()
            .any(|c| c.excerpt.contains("Paddle")),
        "{:?}",
        answer.citations
    );
}
