//! The overview command (`/session-index`): one screen with what the plugin
//! knows, the model it uses and why, whether search ranks by meaning (and
//! how to turn that on), what it spent, config problems and the `@@` syntax.

use std::path::Path;
use std::sync::Arc;

use pi_ext_abi::protocol::{CommandCall, CommandResult};
use serde_json::json;

use super::index_all::{left, survey};
use crate::config::{Config, ModelFallback};
use crate::features::semantic::Semantic;
use crate::model::spend::{Ledger, Spent};
use crate::model::{cost_usd, price_for, LOCAL_PROVIDER};
use crate::plugin::host::NotifyLevel;
use crate::plugin::state::Services;
use crate::store::meta::{ModelChoice, SessionMeta};

const SYNTAX: &str = "\
@@ in a prompt brings an earlier session's summary into the conversation:
  @@auth-refactor          a session by its name (slug)
  @@\"Auth refactor\"        by its exact name, quoted
  @@01a2b3c4               by id or id prefix
  @@auth-refactor~1        with its parent session (~N: N levels up)
  @@auth-refactor: which token format did we pick?   asks that session a question";

pub fn run(services: &Arc<Services>, call: &CommandCall) -> CommandResult {
    let meta_dir = services.meta_dir(&call.ctx);
    let config = &services.config;
    let (rows, report) = crate::features::search_tool::sessions(services, &call.ctx)
        .unwrap_or_else(|e| {
            tracing::warn!("session overview: {e}");
            Default::default()
        });
    let everywhere = survey(&rows, &meta_dir, None);
    let here = survey(&rows, &meta_dir, Some(&call.ctx.cwd));
    let ledger = crate::model::spend::read(&meta_dir);
    let session = services.spent.lock().map(|s| *s).unwrap_or_default();
    let spent_line = spent_line(config, &ledger, session);
    let over = crate::model::spend::cap_reached(&ledger, config.spending.daily_cap_usd, &meta_dir);
    let health = match (services.config_ok(), over) {
        (false, _) => "config invalid: indexing is off",
        (true, Some(_)) => "daily spending cap reached: automatic indexing paused",
        (true, None) => "ok",
    };
    let mut lines = vec![format!(
        "session-index {} — {health}",
        env!("CARGO_PKG_VERSION")
    )];
    let route = if config.use_host_models && services.host.can_complete() {
        "through pi's model registry"
    } else {
        "own API keys"
    };
    lines.push(format!("Model: {}, {route}", next_model(config)));
    lines.push(match newest_meta(&meta_dir) {
        Some(m) => {
            let why = m
                .model_choice
                .as_ref()
                .map(ModelChoice::label)
                .filter(|w| !w.is_empty())
                .unwrap_or("reason not recorded");
            format!("Last index: {} ({why}) at {}", m.model, m.updated_at)
        }
        None => "Last index: none yet".to_string(),
    });
    lines.push(format!(
        "Sessions: {} in all, {} indexed, {} stale, {} without meta; this project {} ({} to index){}",
        everywhere.sessions,
        everywhere.indexed,
        everywhere.stale,
        everywhere.sessions - everywhere.indexed,
        here.sessions,
        here.todo.len(),
        left(&report)
    ));
    let semantic = Semantic::of(&services.agent_dir(&call.ctx), &config.search);
    lines.push(semantic.describe());
    lines.extend(report.scrub.describe());
    lines.push(spent_line);
    if !services.config_problems.is_empty() {
        lines.push(format!(
            "Config problems: {}",
            services.config_problems.join("; ")
        ));
    }
    lines.push(commands_line(config));
    lines.push(SYNTAX.to_string());
    let text = lines.join("\n");
    services.host.notify(&text, NotifyLevel::Info);
    let details = json!({
        "sessions": everywhere.sessions, "indexed": everywhere.indexed, "stale": everywhere.stale,
        "spentUsd": match &ledger {
            Ok(ledger) => json!({"session": session.total(), "today": ledger.today().total(), "allTime": ledger.total.total()}),
            Err(_) => json!({"session": session.total(), "today": null, "allTime": null}),
        },
        "configProblems": services.config_problems,
        "semanticSearch": semantic.model().is_some(),
    });
    CommandResult {
        ok: true,
        message: Some(text),
        details,
        ..CommandResult::default()
    }
}

/// Which model the next index would use and why, with what it costs a
/// session at most (before anything ran): the first `modelKeys` entry with
/// credentials, else what `modelFallback` allows.
fn next_model(config: &Config) -> String {
    let fallback = match config.model_fallback {
        ModelFallback::Offline => "the offline model (free; modelFallback: offline)",
        ModelFallback::Cheapest => "pi's cheapest logged-in model (modelFallback: cheapest)",
        ModelFallback::Session => {
            "pi's cheapest logged-in model, else the session's own (modelFallback: session)"
        }
    };
    let paid: Vec<&String> = config
        .model_keys
        .iter()
        .take_while(|k| !k.starts_with(&format!("{LOCAL_PROVIDER}/")))
        .collect();
    let Some(first) = paid.first() else {
        return "the offline model (modelKeys lists no paid model)".to_string();
    };
    let input = config.indexing.max_input_bytes as u64 / 4;
    let output = u64::from(config.indexing.max_output_tokens);
    let cost = match price_for(config, first) {
        Some(_) => format!(
            "at most ${:.4} a session, {input} input + {output} output tokens",
            cost_usd(config, first, input, output)
        ),
        None => "price unknown, set prices".to_string(),
    };
    let keys: Vec<&str> = paid.iter().map(|k| k.as_str()).collect();
    format!(
        "the first of {} that has credentials ({first}: {cost}); with none, {fallback}",
        keys.join(", ")
    )
}

/// Every command the plugin registered, with what it is for.
fn commands_line(config: &Config) -> String {
    let names = &config.commands;
    let mut commands = vec![
        format!("/{} (this session now)", config.command_name),
        format!("/{} <@@ref> (new session from one)", names.continue_from),
        format!("/{} [--all] [--cancel]", names.index_all),
    ];
    if config.search.enabled {
        commands.push(format!("/{} <words> (search)", config.search.command_name));
    }
    commands.push(format!("/{} (this overview)", names.overview));
    format!("Commands: {}", commands.join(", "))
}

/// The meta file written last (by modification time).
fn newest_meta(meta_dir: &Path) -> Option<SessionMeta> {
    let newest = std::fs::read_dir(meta_dir)
        .ok()?
        .flatten()
        .filter(|e| crate::store::meta::is_meta_file_name(&e.file_name().to_string_lossy()))
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .max_by_key(|(modified, _)| *modified)?;
    crate::store::meta::read_path(&newest.1).ok().flatten()
}

/// `Spent: this session …; today … (cap); all time …`, or why the ledger
/// could not be read (never shown as zero).
fn spent_line(config: &Config, ledger: &std::io::Result<Ledger>, session: Spent) -> String {
    let cap = config
        .spending
        .daily_cap_usd
        .map_or("no daily cap".to_string(), |c| format!("cap ${c:.2}/day"));
    match ledger {
        Ok(ledger) => format!(
            "Spent: this session ${:.4}; today ${:.4} ({cap}); all time ${:.4} (indexing ${:.4}, queries ${:.4})",
            session.total(),
            ledger.today().total(),
            ledger.total.total(),
            ledger.total.indexing,
            ledger.total.queries
        ),
        Err(e) => format!(
            "Spent: this session ${:.4}; today and all time unknown: the spending ledger cannot be read ({e}) ({cap})",
            session.total()
        ),
    }
}
