//! The plugin object: routes host calls to the feature modules.
//!
//! Everything here speaks Rust types; [`crate::plugin::ffi`] owns the boundary.

use std::sync::Arc;
use std::time::Duration;

use pi_ext_abi::protocol::{
    check_version, BeforeAgentStartResult, CommandCall, CommandResult, Event, EventCall,
    FlushReport, InputResult, Registrations, SessionContext, ToolCall, ToolResult, EVENTS,
};
use serde_json::Value;

use crate::plugin::host::NotifyLevel;
use crate::plugin::state::Services;

/// Environment variable naming a handler (`event:<name>`, `tool:<name>`,
/// `command:<name>`) that must panic: used by tests to prove that a panic
/// never crosses the boundary.
pub const PANIC_ON_ENV: &str = "SESSION_INDEX_PANIC_ON";

pub struct SessionIndexPlugin {
    pub services: Arc<Services>,
}

fn panic_if_requested(handler: &str) {
    if std::env::var(PANIC_ON_ENV).is_ok_and(|v| v == handler) {
        panic!("deliberate panic in {handler} ({PANIC_ON_ENV})");
    }
}

impl SessionIndexPlugin {
    pub fn new(services: Arc<Services>) -> Self {
        if let Some(warning) = services.config_warning(&SessionContext::default()) {
            tracing::warn!("{warning}");
        }
        SessionIndexPlugin { services }
    }

    pub fn registrations(&self) -> Registrations {
        let config = &self.services.config;
        let mut tools = Vec::new();
        if config.query.enabled {
            tools.push(crate::features::query::tool_spec());
        }
        let commands = crate::features::commands::specs(&self.services);
        if config.search.enabled {
            tools.push(crate::features::search_tool::tool_spec());
        }
        Registrations {
            events: EVENTS.iter().map(|e| e.to_string()).collect(),
            commands,
            tools,
            config_problems: self.services.config_problems.clone(),
        }
    }

    /// Returns the event's result document (`null` when it has none).
    pub fn on_event(&self, call: EventCall) -> Result<Value, String> {
        panic_if_requested(&format!("event:{}", call.event));
        let services = &self.services;
        match call.typed()? {
            Event::SessionStart {} => {
                if let Some(warning) = services.config_warning(&call.ctx) {
                    services.host.notify(&warning, NotifyLevel::Warning);
                }
                crate::features::references::on_session_start(services, &call.ctx);
                refresh_store(services, &call.ctx);
                Ok(Value::Null)
            }
            Event::Input {} => to_value(&InputResult::Continue),
            Event::BeforeAgentStart { prompt } => {
                services.turn.start();
                let picks = crate::features::references::choose::picks(&call.payload);
                let message = crate::features::references::before_agent_start(
                    services, &call.ctx, &prompt, &picks,
                );
                match message {
                    Some(message) => to_value(&BeforeAgentStartResult {
                        message: Some(message),
                        system_prompt: None,
                    }),
                    None => Ok(Value::Null),
                }
            }
            Event::AgentEnd {} => {
                crate::features::summarize::on_agent_end(services, &call.ctx);
                refresh_store(services, &call.ctx);
                Ok(Value::Null)
            }
            Event::SessionShutdown {} => {
                // Give in-flight indexing a moment; the host's own shutdown waits longer.
                services.jobs.flush(Duration::from_millis(200));
                Ok(Value::Null)
            }
        }
    }

    pub fn call_tool(&self, call: ToolCall) -> Result<ToolResult, String> {
        panic_if_requested(&format!("tool:{}", call.tool));
        check_version(call.v)?;
        let mut result = match call.tool.as_str() {
            "query_session" if self.services.config.query.enabled => {
                crate::features::query::call_tool(&self.services, &call)
            }
            "search_sessions" if self.services.config.search.enabled => {
                crate::features::search_tool::call(&self.services, &call)
            }
            other => return Err(format!("unknown tool '{other}'")),
        };
        outgoing::tool_result(&mut result);
        Ok(result)
    }

    pub fn run_command(&self, call: CommandCall) -> Result<CommandResult, String> {
        panic_if_requested(&format!("command:{}", call.command));
        check_version(call.v)?;
        let mut result = crate::features::commands::run(&self.services, &call)
            .ok_or_else(|| format!("unknown command '{}'", call.command))?;
        outgoing::command_result(&mut result);
        Ok(result)
    }

    pub fn request(&self, method: &str, payload: Value) -> Result<Value, String> {
        panic_if_requested(&format!("request:{method}"));
        match method {
            "references.complete" => Ok(crate::features::references::complete(
                &self.services,
                &payload,
            )),
            "references.questions" => Ok(crate::features::references::choose::questions(
                &self.services,
                &payload,
            )),
            other => Err(format!("unknown request '{other}'")),
        }
    }

    pub fn flush(&self, timeout: Duration) -> FlushReport {
        self.services.jobs.flush(timeout)
    }

    pub fn shutdown(&self, timeout: Duration) -> FlushReport {
        self.services.jobs.shutdown(timeout)
    }
}

fn to_value<T: serde::Serialize>(value: &T) -> Result<Value, String> {
    serde_json::to_value(value).map_err(|e| e.to_string())
}

/// Bring the session store (the search index, which resolution, completion
/// and search read) up to date in the background: one job per agent
/// directory; a trigger while it runs folds into one re-run.
fn refresh_store(services: &Arc<Services>, ctx: &pi_ext_abi::protocol::SessionContext) {
    let c = &services.config;
    if !(c.references.enabled || c.query.enabled || c.search.enabled) {
        return;
    }
    let key = format!("store-refresh:{}", services.agent_dir(ctx).display());
    services.jobs.submit(
        &key,
        services
            .catalog
            .refresh_task(&services.sessions_dir(ctx), &services.meta_dir(ctx)),
    );
    if c.search.enabled {
        crate::features::embedding::embed_in_background(services, ctx);
    }
}

/// What the plugin hands pi is redacted on its way out, whatever it holds:
/// session text comes from the reader already redacted, but paths, project
/// directories and meta files do not, and a new field of a tool's result
/// cannot forget it. What pi acts on (a session file to switch to, a
/// command's arguments) is left as it is.
mod outgoing {
    use pi_ext_abi::protocol::{Action, CommandResult, ContentPart, CustomMessage, ToolResult};

    use crate::redact::{redact, strings_in};

    fn text(s: &mut String) {
        if let std::borrow::Cow::Owned(redacted) = redact(s) {
            *s = redacted;
        }
    }

    pub(super) fn tool_result(result: &mut ToolResult) {
        for ContentPart::Text { text: t } in &mut result.content {
            text(t);
        }
        strings_in(&mut result.details, redact);
    }

    fn message(message: &mut CustomMessage) {
        text(&mut message.content);
        strings_in(&mut message.details, redact);
    }

    pub(super) fn command_result(result: &mut CommandResult) {
        if let Some(m) = &mut result.message {
            text(m);
        }
        strings_in(&mut result.details, redact);
        actions(&mut result.actions);
    }

    fn actions(actions: &mut [Action]) {
        for action in actions {
            match action {
                Action::Select { title, options } => {
                    text(title);
                    for option in options {
                        text(&mut option.label);
                        self::actions(&mut option.actions);
                    }
                }
                Action::NewSession {
                    message: Some(m), ..
                } => message(m),
                Action::InsertText { text: t } => text(t),
                Action::SwitchSession { .. }
                | Action::NewSession { .. }
                | Action::Command { .. } => {}
            }
        }
    }
}
