//! Auto-indexing: the `agent_end` trigger, the `index-session` command and the
//! background job that turns a session into its meta file.

use std::sync::Arc;

use pi_ext_abi::protocol::{CommandCall, CommandResult, SessionContext};

use crate::app::App;

/// `agent_end`: decide whether to index and queue the background job. Returns at once.
pub fn on_agent_end(_app: &Arc<App>, _ctx: &SessionContext) {}

/// `/index-session`: wait for idle, index regardless of the threshold, report.
pub fn run_command(_app: &Arc<App>, _call: &CommandCall) -> CommandResult {
    CommandResult {
        ok: false,
        message: Some("indexing is not implemented yet".into()),
        details: serde_json::Value::Null,
    }
}
