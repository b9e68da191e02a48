//! `/index-session` (config `commandName`): index this session now, whatever
//! the threshold, once the agent is idle, and say what was written.

use std::sync::Arc;
use std::time::Duration;

use pi_ext_abi::protocol::{CommandCall, CommandResult};
use serde_json::json;

use crate::features::summarize::{self, IndexOutcome, Run};
use crate::plugin::host::NotifyLevel;
use crate::plugin::state::Services;

/// `/index-session`: wait for idle, index regardless of the threshold, report.
pub fn run(services: &Arc<Services>, call: &CommandCall) -> CommandResult {
    let failed = |message: String| super::failed(services, message);
    if let Some(ask) = super::ask_over_cap(services, call) {
        return ask;
    }
    if !services.config_ok() {
        return failed(format!(
            "session-index config is invalid: {}",
            services.config_problems.join("; ")
        ));
    }
    if call.ctx.session_file.as_deref().is_none_or(str::is_empty) {
        return failed(
            "this session is not saved to a file (ephemeral), so it cannot be indexed".into(),
        );
    }
    let timeout = Duration::from_millis(services.config.timeout_ms.max(30_000));
    if !services.host.wait_for_idle(timeout) {
        tracing::warn!("the agent did not become idle within {timeout:?}; indexing anyway");
    }
    let past_cap = call.args.split_whitespace().any(|a| a == super::OVER_CAP);
    match summarize::run_serialized(services, &call.ctx, Run::Command { past_cap }) {
        Ok(IndexOutcome::Indexed(indexed)) => {
            let meta = &indexed.meta;
            let message = format!(
                "Indexed: {} ({}, {})",
                meta.name,
                meta.model,
                summarize::report::cost_label(meta)
            );
            services.host.notify(&message, NotifyLevel::Success);
            CommandResult {
                ok: true,
                message: Some(message),
                details: json!({
                    "metaFile": indexed.path.to_string_lossy(),
                    "sessionId": meta.session_id,
                    "name": meta.name,
                    "model": meta.model,
                    "incremental": indexed.incremental,
                    "usage": meta.usage,
                }),
                actions: Vec::new(),
            }
        }
        Ok(IndexOutcome::Kept { model, .. }) => failed(format!(
            "Not indexed: {model} wrote this session's meta, and the offline model (the only one \
             available now) never replaces it"
        )),
        Ok(IndexOutcome::Skipped { .. }) => failed("nothing to index".into()),
        Err(failure) => failed(format!("Indexing failed: {}", failure.error)),
    }
}
