//! `@@` references through the real cdylib loaded by pi-ext-host over the
//! ABI, as `pi-ext-host prompt` drives it: session_start prewarms the
//! catalog, before_agent_start returns the persisted message, completion is
//! a plugin request.

use crate::support::plugin::event_on;
use crate::support::synth::{Agent, Synth};
use serde_json::{json, Value};

#[test]
fn references_through_the_abi() {
    let a = Agent::new();
    let current =
        a.copy_fixture("real/2026-02-19T13-30-29-055Z_64ddb985-5b6b-4d0c-854b-e8300d86dee4.jsonl");
    a.copy_fixture("real/2026-02-20T12-32-37-832Z_fd67ceb3-8afa-47d5-853e-c1ceedcecfb8.jsonl");
    a.copy_fixture("generated/branch-summary-2026-11-22T01-22-32-496Z.jsonl");
    a.copy_fixture("generated/reference-unicode-2026-11-22T01-22-33-704Z.jsonl");
    a.session(
        &Synth::new("0b000000-0000-4000-8000-000000000001", "/x").name("Ünïcode — naïve café ✓"),
    );
    a.session(&Synth::new("0b000000-0000-4000-8000-000000000002", "/y").name("Twin"));
    a.session(&Synth::new("0b000000-0000-4000-8000-000000000003", "/z").name("Twin"));

    let ctx = pi_ext_host::session_context(&current, None, &a.dir, None).unwrap();
    let config = r#"{"references":{"maxRefsPerPrompt":5}}"#;
    let (instance, host) = crate::support::plugin::instance(&ctx, config);

    assert_eq!(
        event_on(
            &instance,
            &ctx,
            "session_start",
            json!({"type": "session_start", "reason": "startup"})
        ),
        Value::Null
    );
    assert!(instance.flush(std::time::Duration::from_secs(30)).idle);

    let text = "Compare @@fd67ceb3 with @@cache-layer-design~1 and @@\"ünïcode — naïve café ✓\"; \
                not `@@twin` nor me@@twin.com, but @@twin and @@../../../etc/passwd";
    let payload = json!({"type": "before_agent_start", "prompt": text, "systemPrompt": "sys"});
    let result = event_on(&instance, &ctx, "before_agent_start", payload);
    let m = &result["message"];
    assert_eq!(m["customType"], "session-reference");
    assert_eq!(m["display"], false);
    assert_eq!(
        m["details"]["sessionIds"],
        json!([
            "fd67ceb3-8afa-47d5-853e-c1ceedcecfb8",
            "01a200d9-05af-72e1-a418-11f8875a7958",
            "0b000000-0000-4000-8000-000000000001"
        ])
    );
    let unresolved = m["details"]["unresolved"].as_array().unwrap();
    let codes: Vec<&str> = unresolved
        .iter()
        .filter_map(|u| u["code"].as_str())
        .collect();
    assert_eq!(
        codes,
        vec!["SESSION_AMBIGUOUS", "SESSION_OUTSIDE"],
        "{unresolved:?}"
    );
    let reason = unresolved[0]["reason"].as_str().unwrap();
    assert!(
        reason.contains("/y") && reason.contains("/z") && reason.contains("0b000000"),
        "{reason}"
    );
    let content = m["content"].as_str().unwrap();
    assert!(content.len() <= 12_000);
    assert!(content.contains("name=\"Cache layer design\""));
    // The branch-summary fixture has no parentSession: depth 1 adds nothing and reports nothing.
    assert_eq!(content.matches("</session-reference>").count(), 3);

    let effects = host.effects();
    let telemetry: Vec<&Value> = effects
        .iter()
        .filter(|e| e["type"] == "appendEntry" && e["customType"] == "session-reference:inject")
        .collect();
    assert_eq!(telemetry.len(), 1);
    let t = &telemetry[0]["data"];
    assert_eq!(
        (t["resolvedCount"].as_u64(), t["unresolvedCount"].as_u64()),
        (Some(3), Some(2))
    );
    assert_eq!(
        t["unresolvedReasons"],
        json!(["SESSION_AMBIGUOUS", "SESSION_OUTSIDE"])
    );
    assert_eq!(t["injectedBytes"].as_u64(), Some(content.len() as u64));
    assert!(effects
        .iter()
        .any(|e| e["type"] == "notify" && e["level"] == "warning"));

    let done = instance
        .request(
            "references.complete",
            &json!({"prefix": "cache", "limit": 3}),
        )
        .unwrap();
    assert_eq!(
        done["candidates"][0]["id"],
        "01a200d9-05af-72e1-a418-11f8875a7958"
    );
    assert_eq!(done["candidates"][0]["reference"], "cache-layer-design");

    // No references: no message, no telemetry.
    host.take_effects();
    let plain = event_on(
        &instance,
        &ctx,
        "before_agent_start",
        json!({"prompt": "just code `@@x`", "systemPrompt": "s"}),
    );
    assert_eq!(plain, Value::Null);
    assert!(host.effects().iter().all(|e| e["type"] != "appendEntry"));
}
