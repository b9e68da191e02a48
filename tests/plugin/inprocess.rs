//! The real session-index cdylib, loaded in-process through pi-ext-host.

use std::time::Duration;

use crate::support::plugin::{event, load_plugin, real_session};
use pi_ext_abi::protocol::{CommandCall, ToolCall, PROTOCOL_VERSION};
use serde_json::{json, Value};

#[test]
fn registers_its_events_command_and_tool_with_a_schema() {
    let loaded = load_plugin(&real_session(), None);
    assert_eq!(loaded.instance.plugin_id(), "session-index@0.1.0");
    let regs = loaded.instance.registrations();
    for e in ["agent_end", "before_agent_start"] {
        assert!(
            regs.events.iter().any(|x| x == e),
            "missing event {e}: {:?}",
            regs.events
        );
    }
    assert!(
        regs.commands.iter().any(|c| c.name == "index-session"),
        "{:?}",
        regs.commands
    );
    let tool = regs
        .tools
        .iter()
        .find(|t| t.name == "query_session")
        .expect("query_session registered");
    assert_eq!(tool.parameters["type"], "object");
    assert!(
        tool.parameters["properties"].is_object(),
        "{}",
        tool.parameters
    );
    assert!(!tool.description.is_empty() && !tool.label.is_empty());
    let manifest = pi_ext_host::Manifest::load(crate::support::plugin::repo_root()).unwrap();
    assert_eq!(
        manifest.registration_mismatches(&regs),
        Vec::<String>::new(),
        "plugin.toml and the plugin disagree"
    );
}

#[test]
fn events_return_pi_shaped_results() {
    let loaded = load_plugin(&real_session(), None);
    assert_eq!(
        event(&loaded, "session_start", json!({"reason": "startup"})),
        Ok(Value::Null)
    );
    assert_eq!(
        event(
            &loaded,
            "input",
            json!({"text": "hi", "source": "interactive"})
        ),
        Ok(json!({"action": "continue"}))
    );
    assert_eq!(
        event(&loaded, "agent_end", json!({"messages": []})),
        Ok(Value::Null)
    );
    let report = loaded.instance.flush(Duration::from_secs(30));
    assert!(report.idle, "{report:?}");
}

#[test]
fn an_invalid_config_is_reported_as_a_notify_effect_on_session_start() {
    let loaded = load_plugin(&real_session(), Some(r#"{"timeoutMs": "soon"}"#));
    assert_eq!(
        event(&loaded, "session_start", json!({"reason": "startup"})),
        Ok(Value::Null)
    );
    let notify: Vec<Value> = loaded
        .host
        .effects()
        .into_iter()
        .filter(|e| e["type"] == "notify")
        .collect();
    assert_eq!(notify.len(), 1, "{notify:?}");
    assert_eq!(notify[0]["level"], "warning");
    let text = notify[0]["text"].as_str().unwrap();
    assert!(
        text.starts_with("session-index config ")
            && text.ends_with(
                ": timeoutMs: expected an integer, got \"soon\"; its default applies. \
                 The rest of the config applies."
            ),
        "the file, the full key path, what applies: {text}"
    );
}

#[test]
fn unknown_names_and_bad_arguments_are_refused_by_the_host() {
    let loaded = load_plugin(&real_session(), None);
    let err = event(&loaded, "turn_start", json!({})).unwrap_err();
    assert!(err.starts_with("unknown event 'turn_start'"), "{err}");
    let call = |tool: &str, params: Value| ToolCall {
        v: PROTOCOL_VERSION,
        tool: tool.into(),
        tool_call_id: "t1".into(),
        params,
        ctx: loaded.ctx.clone(),
    };
    let err = loaded.instance.tool(&call("nope", json!({}))).unwrap_err();
    assert!(
        err.contains("unknown tool 'nope'") && err.contains("query_session"),
        "{err}"
    );
    let err = loaded
        .instance
        .tool(&call("query_session", json!("text")))
        .unwrap_err();
    assert!(err.contains("must be a JSON object"), "{err}");
    let command = CommandCall {
        v: PROTOCOL_VERSION,
        command: "nope".into(),
        args: String::new(),
        ctx: loaded.ctx.clone(),
    };
    let err = loaded.instance.command(&command).unwrap_err();
    assert!(
        err.contains("unknown command 'nope'") && err.contains("index-session"),
        "{err}"
    );
    let err = loaded
        .instance
        .request("no.such.method", &json!({}))
        .unwrap_err();
    assert!(
        err.contains("unknown request") && !err.contains('\n'),
        "{err}"
    );
}

#[test]
fn two_instances_of_one_library_keep_separate_effects() {
    let a = load_plugin(&real_session(), Some(r#"{"timeoutMs": "soon"}"#));
    let b = load_plugin(&real_session(), None);
    event(&a, "session_start", json!({})).unwrap();
    event(&b, "session_start", json!({})).unwrap();
    assert!(a.host.effects().iter().any(|e| e["type"] == "notify"));
    assert!(
        !b.host.effects().iter().any(|e| e["type"] == "notify"),
        "{:?}",
        b.host.effects()
    );
}

#[test]
fn shutdown_is_idempotent_and_later_calls_are_refused() {
    let session = real_session();
    let before = std::fs::read(&session).unwrap();
    let loaded = load_plugin(&session, None);
    event(&loaded, "agent_end", json!({"messages": []})).unwrap();
    assert!(loaded.instance.shutdown(Duration::from_secs(30)).idle);
    assert!(loaded.instance.shutdown(Duration::from_secs(1)).idle);
    let err = event(&loaded, "agent_end", json!({})).unwrap_err();
    assert!(err.contains("shut down"), "{err}");
    // The file the plugin was given (a copy inside the agent dir's sessions/).
    let given = loaded.ctx.session_file.as_deref().expect("a session file");
    assert_eq!(
        std::fs::read(given).unwrap(),
        before,
        "the host must never write session files"
    );
}
