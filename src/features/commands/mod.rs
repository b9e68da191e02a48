//! The plugin's commands in pi: `/index-session`, the overview, `/continue`,
//! bulk indexing and `/sessions` (search). Session controls (a new session, the
//! selector) are returned as pi-ext-abi 1.1 actions for the host to perform
//! once the command has returned.

pub mod index_all;
pub mod index_session;
pub mod overview;
pub mod sessions;

use std::sync::Arc;

use pi_ext_abi::protocol::{Action, CommandCall, CommandResult, CommandSpec, SelectOption};
use serde_json::json;

use crate::plugin::host::NotifyLevel;
use crate::plugin::state::Services;

/// The commands of this module, with the names the config gives them.
pub fn specs(services: &Services) -> Vec<CommandSpec> {
    let names = &services.config.commands;
    let spec = |name: &str, description: &str| CommandSpec {
        name: name.into(),
        description: description.into(),
    };
    let search = &services.config.search;
    let search = search.enabled.then(|| {
        spec(
            &search.command_name,
            "Search past sessions by what was said in them",
        )
    });
    let commands = vec![
        spec(
            &services.config.command_name,
            "Index this session now: name, description, summary and tags in sessions-meta",
        ),
        spec(&names.overview, "session-index: what it knows, the model in use, money spent, @@ syntax"),
        spec(&names.continue_from, "Start a new session carrying a session's summary: /continue <@@reference>"),
        spec(
            &names.index_all,
            "Index sessions lacking an up-to-date meta in the background (--all: every project, --cancel)",
        ),
    ];
    commands.into_iter().chain(search).collect()
}

/// Run `call` if it is one of this module's commands.
pub fn run(services: &Arc<Services>, call: &CommandCall) -> Option<CommandResult> {
    let names = &services.config.commands;
    let name = call.command.as_str();
    Some(if name == services.config.command_name {
        index_session::run(services, call)
    } else if name == names.overview {
        overview::run(services, call)
    } else if name == names.continue_from {
        continue_from(services, call)
    } else if name == names.index_all {
        index_all::run_command(services, call)
    } else if services.config.search.enabled && name == services.config.search.command_name {
        sessions::run(services, call)
    } else {
        return None;
    })
}

/// A failed command, also shown to the user.
pub fn failed(services: &Services, message: String) -> CommandResult {
    services.host.notify(&message, NotifyLevel::Error);
    CommandResult {
        ok: false,
        message: Some(message),
        ..CommandResult::default()
    }
}

/// The argument with which a command spends past the daily cap.
pub const OVER_CAP: &str = "--over-cap";

/// Past the daily cap an explicit command asks first: a selector whose first
/// option runs it again with [`OVER_CAP`]. `None`: go ahead.
pub fn ask_over_cap(services: &Services, call: &CommandCall) -> Option<CommandResult> {
    let reached = crate::model::spend::over_cap(
        services.config.spending.daily_cap_usd,
        &services.meta_dir(&call.ctx),
    )?;
    if call.args.split_whitespace().any(|a| a == OVER_CAP) {
        return None;
    }
    if !call.ctx.can("select") {
        return Some(failed(
            services,
            format!(
                "{reached}: run /{} {OVER_CAP} to spend anyway",
                call.command
            ),
        ));
    }
    let again = Action::Command {
        command: call.command.clone(),
        args: format!("{} {OVER_CAP}", call.args.trim()),
    };
    let options = vec![
        SelectOption {
            label: "Spend anyway".into(),
            actions: vec![again],
        },
        SelectOption {
            label: "Cancel".into(),
            actions: Vec::new(),
        },
    ];
    let title = format!("session-index: {reached}. Run /{} anyway?", call.command);
    Some(CommandResult {
        ok: true,
        message: Some(format!("session-index: {reached}")),
        actions: vec![Action::Select { title, options }],
        ..CommandResult::default()
    })
}

/// `/continue <ref>`: a new session whose header names the referenced
/// session as its parent and whose first entry is that session's context.
fn continue_from(services: &Arc<Services>, call: &CommandCall) -> CommandResult {
    let reference = call.args.trim();
    let usage = format!(
        "usage: /{} <@@reference> (a name, slug, id prefix or \"quoted name\")",
        call.command
    );
    if reference.is_empty() {
        return failed(services, usage);
    }
    if !call.ctx.can("newSession") {
        return failed(
            services,
            "this pi bridge cannot start sessions (it needs pi-ext-abi 1.1 actions)".into(),
        );
    }
    match crate::features::references::continue_message(services, &call.ctx, reference) {
        Ok((parent, message)) => {
            let text = format!("Continuing from {reference} in a new session");
            CommandResult {
                ok: true,
                message: Some(text),
                details: json!({"parentSession": parent, "bytes": message.content.len()}),
                actions: vec![Action::NewSession {
                    parent_session: Some(parent),
                    message: Some(message),
                }],
            }
        }
        Err(reason) => failed(services, format!("/{}: {reason}", call.command)),
    }
}
