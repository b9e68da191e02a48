//! query_session through the real cdylib loaded by pi-ext-host over the ABI:
//! an offline answer about a branched session (cited entries on the active
//! branch only), the call limit and its reset at `before_agent_start`, error
//! codes as tool results, and the telemetry entry.

use std::path::{Path, PathBuf};

use crate::support::plugin::tool_on;
use pi_ext_abi::protocol::{EventCall, PROTOCOL_VERSION};
use serde_json::{json, Value};

const BRANCH: &str = "generated/branch-summary-2026-11-22T01-22-32-496Z.jsonl";
const ABANDONED: &[&str] = &["68cd183e", "076a9a87", "5044597e", "d7787b63"];

fn copy_into(agent: &Path, rel: &str) -> PathBuf {
    let src = crate::support::plugin::fixtures_dir().join(rel);
    let dir = agent.join("sessions").join("--work-proj--");
    std::fs::create_dir_all(&dir).unwrap();
    let dest = dir.join(src.file_name().unwrap());
    std::fs::copy(&src, &dest).unwrap();
    dest
}

#[test]
fn query_session_through_the_abi() {
    let agent = tempfile::tempdir().unwrap();
    copy_into(agent.path(), BRANCH);
    let current = copy_into(
        agent.path(),
        "real/2026-02-19T13-30-29-055Z_64ddb985-5b6b-4d0c-854b-e8300d86dee4.jsonl",
    );
    let ctx = pi_ext_host::session_context(&current, None, agent.path(), None).unwrap();
    let config = r#"{"modelKeys":["local/extractive"]}"#;
    let (instance, host) = crate::support::plugin::instance(&ctx, config);
    assert!(instance
        .registrations()
        .tools
        .iter()
        .any(|t| t.name == "query_session"));

    let result = tool_on(
        &instance,
        &ctx,
        "query_session",
        json!({"session": "Cache layer design", "question": "Which eviction policy did we settle on?"}),
    );
    assert!(!result.is_error, "{result:?}");
    let details = &result.details;
    assert_eq!(details["name"], "Cache layer design");
    assert_eq!(details["model"], "local/extractive");
    let cited: Vec<&str> = details["citations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["entryId"].as_str().unwrap())
        .collect();
    assert!(cited.contains(&"83ceaa8d"), "{cited:?}");
    let in_context = details["contextEntryIds"].as_array().unwrap();
    assert!(
        in_context.iter().any(|v| v == "abd28777"),
        "branch summary missing: {in_context:?}"
    );
    for id in ABANDONED {
        assert!(!cited.contains(id), "cited abandoned entry {id}");
        assert!(
            !details.to_string().contains(id),
            "abandoned entry {id} in the result"
        );
    }

    let limited = tool_on(
        &instance,
        &ctx,
        "query_session",
        json!({"session": "Cache layer design", "question": "again?"}),
    );
    assert!(limited.is_error);
    assert_eq!(limited.details["code"], "CALL_LIMIT_EXCEEDED");

    let event = EventCall {
        v: PROTOCOL_VERSION,
        event: "before_agent_start".into(),
        payload: json!({"prompt": "go on", "systemPrompt": ""}),
        ctx: ctx.clone(),
    };
    instance.event(&event).unwrap();
    let missing = tool_on(
        &instance,
        &ctx,
        "query_session",
        json!({"session": "no-such-thing-at-all", "question": "q?"}),
    );
    assert_eq!(missing.details["code"], "SESSION_NOT_FOUND", "{missing:?}");
    // An unresolved reference does not use up the allowance.
    let again = tool_on(
        &instance,
        &ctx,
        "query_session",
        json!({"session": "01a200d9-05af", "question": "Which eviction policy?"}),
    );
    assert!(!again.is_error, "{again:?}");
    let bad = tool_on(&instance, &ctx, "query_session", json!({"session": "x"}));
    assert_eq!(bad.details["code"], "INVALID_ARGS");

    let telemetry: Vec<Value> = host
        .effects()
        .into_iter()
        .filter(|e| e["type"] == "appendEntry" && e["customType"] == "session-query:query")
        .collect();
    assert_eq!(telemetry.len(), 5, "{telemetry:?}");
    assert_eq!(telemetry[0]["data"]["success"], true);
    instance.shutdown(std::time::Duration::from_millis(500));
}
