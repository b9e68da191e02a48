//! A panicking handler inside the real cdylib does not take the host down:
//! the host gets a one-line error and the next call works. The switch is a
//! process-wide environment variable, so the test runs alone in a child
//! process of this binary, where no other test meets the rigged handlers.

use crate::support::plugin::{event, load_plugin, real_session};
use pi_ext_abi::protocol::{CommandCall, ToolCall, PROTOCOL_VERSION};
use serde_json::{json, Value};

const PANIC_ON: &str = "SESSION_INDEX_PANIC_ON";

fn assert_panic_error(result: Result<impl std::fmt::Debug, String>, handler: &str) {
    let err = result.expect_err("the handler should have failed");
    assert!(
        err.contains("panicked") && err.contains(&format!("deliberate panic in {handler}")),
        "{err}"
    );
    assert!(!err.contains('\n'), "not one line: {err}");
}

#[test]
fn panics_in_event_tool_and_command_handlers_become_errors_and_the_host_keeps_working() {
    if !crate::support::running_alone() {
        return crate::support::run_alone(&crate::support::test_name(
            module_path!(),
            "panics_in_event_tool_and_command_handlers_become_errors_and_the_host_keeps_working",
        ));
    }
    let loaded = load_plugin(&real_session(), None);
    let tool = ToolCall {
        v: PROTOCOL_VERSION,
        tool: "query_session".into(),
        tool_call_id: "t1".into(),
        params: json!({"session": "abc123", "question": "what?"}),
        ctx: loaded.ctx.clone(),
    };
    let command = CommandCall {
        v: PROTOCOL_VERSION,
        command: "index-session".into(),
        args: String::new(),
        ctx: loaded.ctx.clone(),
    };

    std::env::set_var(PANIC_ON, "event:agent_end");
    assert_panic_error(
        event(&loaded, "agent_end", json!({"messages": []})),
        "event:agent_end",
    );
    // Same instance, other handler: still fine while agent_end is rigged.
    assert_eq!(event(&loaded, "session_start", json!({})), Ok(Value::Null));

    std::env::set_var(PANIC_ON, "tool:query_session");
    assert_panic_error(loaded.instance.tool(&tool), "tool:query_session");

    std::env::set_var(PANIC_ON, "command:index-session");
    assert_panic_error(loaded.instance.command(&command), "command:index-session");

    std::env::remove_var(PANIC_ON);
    assert_eq!(
        event(&loaded, "agent_end", json!({"messages": []})),
        Ok(Value::Null)
    );
    assert!(loaded.instance.tool(&tool).is_ok());
    assert!(loaded.instance.command(&command).is_ok());

    // The plugin's panic report reached the host as a log record, not raw stderr.
    let panics: Vec<Value> = loaded
        .host
        .effects()
        .into_iter()
        .filter(|e| {
            e["type"] == "log"
                && e["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("deliberate panic"))
        })
        .collect();
    assert!(!panics.is_empty(), "{:?}", loaded.host.effects());
    assert!(
        loaded
            .instance
            .shutdown(std::time::Duration::from_secs(10))
            .idle
    );
}
