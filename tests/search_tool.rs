//! `search_sessions` through the plugin with a recording host: registration
//! and the config switch, ranked results with entry ids from the real file,
//! the per-run call limit, and the background refresh after `agent_end`.

use std::time::Duration;

use crate::support::synth::Agent;
use pi_ext_abi::protocol::{ContentPart, EventCall, ToolCall, ToolResult};
use serde_json::{json, Value};
use session_index::plugin::router::SessionIndexPlugin;

const TOOLS: &str = "generated/tools-compaction-2026-11-22T01-22-31-354Z.jsonl";
const TOOLS_ID: &str = "01a200d9-013a-7380-b9a2-8976428e929c";

fn call(plugin: &SessionIndexPlugin, agent: &Agent, params: Value) -> ToolResult {
    let call = ToolCall {
        v: 1,
        tool: "search_sessions".into(),
        tool_call_id: "t1".into(),
        params,
        ctx: agent.ctx("/elsewhere"),
    };
    plugin.call_tool(call).expect("a known tool")
}

fn text(result: &ToolResult) -> String {
    result
        .content
        .iter()
        .map(|ContentPart::Text { text }| text.as_str())
        .collect()
}

fn event(plugin: &SessionIndexPlugin, agent: &Agent, name: &str, payload: Value) {
    let call = EventCall {
        v: 1,
        event: name.into(),
        payload,
        ctx: agent.ctx("/elsewhere"),
    };
    plugin.on_event(call).expect("event handled");
}

#[test]
fn search_sessions_finds_ranked_sessions_with_entry_ids_within_the_call_limit() {
    let agent = Agent::new();
    let file = agent.copy_fixture(TOOLS);
    for rel in [
        "generated/branch-summary-2026-11-22T01-22-32-496Z.jsonl",
        "generated/long-session-2026-11-22T01-22-35-963Z.jsonl",
    ] {
        agent.copy_fixture(rel);
    }
    // The tool waits for the index for 300 ms at most and then searches what is
    // there: a debug build on a loaded machine may not get through three files
    // in that time, so the index is brought up to date first (this test is
    // about ranking, entry ids and the call limit, not the catch-up).
    session_index::store::Store::open(&agent.dir)
        .and_then(|mut store| store.update(&agent.sessions(), &agent.meta_dir(), None))
        .expect("the index is built");
    let (services, _rec) = agent.services("/elsewhere", r#"{"search":{"maxCallsPerTurn":2}}"#);
    let plugin = SessionIndexPlugin::new(services);
    assert!(plugin
        .registrations()
        .tools
        .iter()
        .any(|t| t.name == "search_sessions"));
    // The index complete first, as pi's session_start refresh leaves it: the
    // call's own catch-up (300 ms) may not finish the three on a loaded machine.
    event(&plugin, &agent, "session_start", json!({}));
    plugin.flush(Duration::from_secs(60));

    let result = call(
        &plugin,
        &agent,
        json!({"query": "token bucket limiter", "limit": 3}),
    );
    assert!(!result.is_error, "{}", text(&result));
    let results = result.details["results"].as_array().expect("results");
    assert_eq!(results[0]["id"], TOOLS_ID, "{}", text(&result));
    let file_text = std::fs::read_to_string(&file).expect("read the fixture");
    let entry = results[0]["snippets"][0]["entryId"]
        .as_str()
        .expect("an entry id");
    assert!(
        file_text.contains(&format!("\"id\":\"{entry}\"")),
        "entry {entry} is in the session file"
    );
    let shown = text(&result);
    assert!(
        shown.contains(TOOLS_ID)
            && shown.contains(&format!("[{entry}]"))
            && shown.contains("**token**"),
        "{shown}"
    );

    // The per-run limit: a third call fails until the next run starts.
    assert!(!call(&plugin, &agent, json!({"query": "limiter"})).is_error);
    let third = call(&plugin, &agent, json!({"query": "limiter"}));
    assert!(
        third.is_error && text(&third).contains("limit of 2"),
        "{}",
        text(&third)
    );
    event(
        &plugin,
        &agent,
        "before_agent_start",
        json!({"prompt": "hi"}),
    );
    assert!(!call(&plugin, &agent, json!({"query": "limiter"})).is_error);

    // Bad arguments: one line each.
    for bad in [
        json!({}),
        json!({"query": ""}),
        json!({"query": "x", "other": 1}),
        json!({"query": "!!!"}),
    ] {
        let result = call(&plugin, &agent, bad.clone());
        assert!(
            result.is_error && !text(&result).contains('\n'),
            "{bad}: {}",
            text(&result)
        );
    }
}

#[test]
fn the_switch_turns_it_off_and_agent_end_refreshes_the_index() {
    let agent = Agent::new();
    let (services, _rec) = agent.services(
        "/elsewhere",
        r#"{"search":{"enabled":false,"commandName":"find"}}"#,
    );
    let plugin = SessionIndexPlugin::new(services);
    assert!(!plugin
        .registrations()
        .tools
        .iter()
        .any(|t| t.name == "search_sessions"));
    let call = ToolCall {
        v: 1,
        tool: "search_sessions".into(),
        tool_call_id: "t".into(),
        params: json!({"query": "x"}),
        ctx: agent.ctx("/"),
    };
    assert!(plugin.call_tool(call).is_err());

    let (services, _rec) = agent.services("/elsewhere", "{}");
    let plugin = SessionIndexPlugin::new(services);
    agent.copy_fixture(TOOLS);
    event(&plugin, &agent, "agent_end", json!({}));
    plugin.flush(Duration::from_secs(30));
    let index = session_index::store::Store::open(&agent.dir).expect("the index exists");
    let ids: Vec<String> = index
        .records()
        .expect("sessions")
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(ids, vec![TOOLS_ID]);
}
