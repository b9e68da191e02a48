//! Indexing through the real cdylib loaded by pi-ext-host (as a host would):
//! `agent_end` with the offline model, and `/index-session` against a mock
//! provider over loopback HTTP made from inside the plugin library.

use std::path::PathBuf;
use std::time::Duration;

use crate::support::mock_provider::{MockProvider, Reply, Wire};
use crate::support::summarize::*;
use pi_ext_abi::protocol::{CommandCall, EventCall, PROTOCOL_VERSION};
use pi_ext_host::{PluginInstance, RecordingHost};
use serde_json::{json, Value};
use session_index::store::meta;

struct Hosted {
    _dir: tempfile::TempDir,
    agent_dir: PathBuf,
    host: RecordingHost,
    instance: PluginInstance,
    ctx: pi_ext_abi::protocol::SessionContext,
}

fn hosted(example: &str, config: Value) -> Hosted {
    let Scratch {
        dir,
        agent_dir,
        session_file: session,
    } = Scratch::new(example);
    let ctx = pi_ext_host::session_context(&session, None, &agent_dir, None).unwrap();
    let (instance, host) = crate::support::plugin::instance(&ctx, &config.to_string());
    Hosted {
        _dir: dir,
        agent_dir,
        host,
        instance,
        ctx,
    }
}

fn of_type<'a>(effects: &'a [Value], kind: &str) -> Vec<&'a Value> {
    effects.iter().filter(|e| e["type"] == kind).collect()
}

#[test]
fn agent_end_through_the_host_writes_a_meta_file_offline() {
    let h = hosted(
        FLAKY_CI,
        json!({"modelKeys": ["local/extractive"], "useHostModels": false}),
    );
    let call = EventCall {
        v: PROTOCOL_VERSION,
        event: "agent_end".into(),
        payload: json!({"messages": []}),
        ctx: h.ctx.clone(),
    };
    assert_eq!(h.instance.event(&call), Ok(Value::Null));
    assert!(h.instance.flush(Duration::from_secs(60)).idle);

    let meta_dir = h.agent_dir.join("sessions-meta");
    let session_id = h.ctx.session_id.clone().unwrap();
    let meta = meta::read(&meta_dir, &session_id)
        .unwrap()
        .expect("meta file written by the plugin");
    assert_eq!(meta.model, "local/extractive");
    assert!(
        meta.tags.contains(&"ticket:OPS-7".to_string()),
        "{:?}",
        meta.tags
    );
    assert!(meta.summary.contains("## Next Steps"));

    let effects = h.host.effects();
    let entries = of_type(&effects, "appendEntry");
    assert_eq!(entries.len(), 1, "{effects:?}");
    assert_eq!(entries[0]["customType"], "session-index:index");
    assert_eq!(entries[0]["data"]["success"], true);
    assert_eq!(entries[0]["data"]["sessionId"], session_id);
    assert_eq!(of_type(&effects, "setSessionName")[0]["name"], meta.name);
    let statuses: Vec<&Value> = of_type(&effects, "setStatus")
        .iter()
        .map(|e| &e["text"])
        .collect();
    assert_eq!(statuses[0], "indexing…");
    assert_eq!(statuses[1], "indexed (offline)");
    h.instance.shutdown(Duration::from_secs(5));
}

#[test]
fn index_command_through_the_host_uses_the_mock_provider() {
    let mock = MockProvider::start(Wire::Anthropic);
    mock.push(Reply::answer_json(&answer("Rate limiting for the API gateway")).usage(2000, 200));
    let mut provider = mock.provider_config();
    provider["noApiKey"] = json!(true);
    let h = hosted(
        RATE_LIMITER,
        json!({"modelKeys": ["anthropic/claude-haiku-4-5"], "useHostModels": false, "offlineFallback": false,
               "providers": {"anthropic": provider},
               "prices": {"anthropic/claude-haiku-4-5": {"inputPerMtok": 1.0, "outputPerMtok": 5.0}}}),
    );
    let call = CommandCall {
        v: PROTOCOL_VERSION,
        command: "index-session".into(),
        args: String::new(),
        ctx: h.ctx.clone(),
    };
    let result = h.instance.command(&call).unwrap();
    assert!(result.ok, "{result:?}");
    assert_eq!(result.details["model"], "anthropic/claude-haiku-4-5");

    let meta = meta::read(&h.agent_dir.join("sessions-meta"), RATE_LIMITER_ID)
        .unwrap()
        .unwrap();
    assert_eq!(meta.name, "Rate limiting for the API gateway");
    let usage = meta.usage.unwrap();
    assert_eq!((usage.input_tokens, usage.output_tokens), (2000, 200));
    assert!((usage.cost_usd - 0.003).abs() < 1e-9);
    assert_eq!(mock.requests().len(), 1);

    let effects = h.host.effects();
    assert!(
        !of_type(&effects, "waitForIdle").is_empty(),
        "the command waits for idle first"
    );
    let entry = of_type(&effects, "appendEntry")[0];
    assert_eq!(entry["data"]["usage"]["costUsd"], 0.003);
    assert!(
        of_type(&effects, "setStatus")
            .iter()
            .any(|e| e["text"] == "indexed ($0.0030 by anthropic/claude-haiku-4-5: configured key)"),
        "{effects:?}"
    );
    h.instance.shutdown(Duration::from_secs(5));
}

#[test]
fn pi_ext_host_binary_agent_end_wait_writes_a_meta_file() {
    let Scratch {
        dir,
        agent_dir,
        session_file: session,
    } = Scratch::new(JWT);
    let config = dir.path().join("config.json");
    std::fs::write(&config, r#"{"modelKeys": ["local/extractive"]}"#).unwrap();

    let output = crate::support::plugin::host_command(&agent_dir, &config)
        .args(["event", "agent_end", "--wait", "--session"])
        .arg(&session)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["flush"]["idle"], true);
    let effects = report["effects"].as_array().unwrap();
    let entry = of_type(effects, "appendEntry")[0];
    assert_eq!(entry["data"]["success"], true);

    let id = "01a200f2-9f17-727b-b6a3-41610f73ac8c";
    let meta = meta::read(&agent_dir.join("sessions-meta"), id)
        .unwrap()
        .expect("meta file written");
    assert_eq!(meta.name, "JWT expiry and refresh tokens");
    assert_eq!(meta.session_file, session.to_string_lossy());
    assert!(
        meta.decisions
            .iter()
            .any(|d| d.contains("30 seconds of clock skew")),
        "{:?}",
        meta.decisions
    );
}
