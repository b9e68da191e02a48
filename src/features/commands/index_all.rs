//! Bulk indexing (`/index-all`): every session of the project (every project
//! with `--all`) lacking an up-to-date meta, one after another in the
//! background, with `n/N` in the status line. A second invocation (or
//! `--cancel`) stops it after the session in progress.
//!
//! A meta is up to date when it was written after the session's last message
//! (pi's "modified" time), so nothing already indexed is indexed again. Other
//! sessions are pi's: a bulk run writes their meta files only, never entries
//! or names into them (those effects would land in the current session).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use pi_ext_abi::protocol::{Action, CommandCall, CommandResult, SelectOption};

use super::{ask_over_cap, failed, OVER_CAP};
use crate::config::{Config, ModelFallback};
use crate::features::summarize::job::{self, index_session, IndexOutcome, IndexRequest};
use crate::features::summarize::report::{self, RunLock};
use crate::model::{ModelError, LOCAL_PROVIDER};
use crate::plugin::host::NotifyLevel;
use crate::plugin::state::Services;
use crate::session::discovery;
use crate::store::{SessionRecord, UpdateReport};

/// What the meta directory holds for a set of sessions.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Survey {
    pub sessions: usize,
    /// Sessions with a meta file.
    pub indexed: usize,
    /// Sessions whose meta is older than their last message.
    pub stale: usize,
    /// Sessions lacking an up-to-date meta, newest first.
    pub todo: Vec<PathBuf>,
}

/// Survey the index's `rows` of `cwd`'s project, or of every project (`None`).
pub fn survey(rows: &[SessionRecord], meta_dir: &Path, cwd: Option<&str>) -> Survey {
    let listed: Vec<&SessionRecord> = rows
        .iter()
        .filter(|r| cwd.is_none_or(|c| discovery::in_project(&r.path, c)))
        .collect();
    let mut out = Survey {
        sessions: listed.len(),
        ..Survey::default()
    };
    for s in listed {
        let written = crate::store::meta::meta_path(meta_dir, &s.id)
            .ok()
            .and_then(|p| std::fs::metadata(p).ok())
            .and_then(|m| m.modified().ok())
            .map(|t| {
                t.duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_millis() as u64)
            });
        match written {
            Some(ms) if ms >= s.last_activity_ms => out.indexed += 1,
            Some(_) => {
                out.indexed += 1;
                out.stale += 1;
                out.todo.push(s.path.clone());
            }
            None => out.todo.push(s.path.clone()),
        }
    }
    out
}

/// `/index-all [--all] [--cancel]`.
pub fn run_command(services: &Arc<Services>, call: &CommandCall) -> CommandResult {
    let args: Vec<&str> = call.args.split_whitespace().collect();
    let running = services.bulk.lock().ok().and_then(|mut b| b.take());
    if let Some(cancel) = running {
        cancel.store(true, Ordering::SeqCst);
        return done(
            services,
            "Bulk indexing cancelled (after the session in progress)".into(),
        );
    }
    if args.contains(&"--cancel") {
        return done(services, "No bulk indexing is running".into());
    }
    if let Some(unknown) = args
        .iter()
        .find(|a| !["--all", OVER_CAP, YES, OFFLINE].contains(a))
    {
        return failed(
            services,
            format!(
                "/{}: unknown argument {unknown} (use --all, --offline or --cancel)",
                call.command
            ),
        );
    }
    if !services.config_ok() {
        return failed(
            services,
            format!(
                "session-index config is invalid: {}",
                services.config_problems.join("; ")
            ),
        );
    }
    if let Some(ask) = ask_over_cap(services, call) {
        return ask;
    }
    let (rows, report) = match crate::features::search_tool::sessions(services, &call.ctx) {
        Ok(found) => found,
        Err(e) => return failed(services, format!("/{}: {e}", call.command)),
    };
    let (meta_dir, every) = (services.meta_dir(&call.ctx), args.contains(&"--all"));
    let found = survey(&rows, &meta_dir, (!every).then_some(call.ctx.cwd.as_str()));
    let scope = if every {
        "every project"
    } else {
        "this project"
    };
    if found.todo.is_empty() {
        let text = format!(
            "All {} sessions of {scope} have an up-to-date meta{}",
            found.sessions,
            left(&report)
        );
        return done(services, text);
    }
    let offline = args.contains(&OFFLINE);
    if !offline && !args.contains(&YES) {
        if let Some(model) = paid_model(services) {
            return ask_first(services, call, &found.todo, &model);
        }
    }
    let cancel = Arc::new(AtomicBool::new(false));
    if let Ok(mut bulk) = services.bulk.lock() {
        *bulk = Some(Arc::clone(&cancel));
    }
    let total = found.todo.len();
    let over_cap_ok = args.contains(&OVER_CAP);
    let weak = Arc::downgrade(services);
    let todo = found.todo.clone();
    // A key of its own: a run started while a cancelled one finishes must not be folded into it.
    let key = format!("bulk-index:{:p}", Arc::as_ptr(&cancel));
    services.jobs.submit(&key, move || {
        if let Some(services) = weak.upgrade() {
            run(&services, &todo, &meta_dir, &cancel, over_cap_ok, offline);
        }
    });
    let text = format!(
        "Indexing {total} of {} sessions of {scope} in the background (n/N in the status line; /{} again cancels){}",
        found.sessions,
        call.command,
        left(&report)
    );
    done(services, text)
}

/// The argument with which a bulk run spends on a model without asking.
const YES: &str = "--yes";
/// The argument with which a bulk run uses the offline model only.
const OFFLINE: &str = "--offline";
/// What a bulk run names when pi picks the model (`modelFallback`).
const PIS_CHEAPEST: &str = "pi's cheapest logged-in model";

/// The model a bulk run would pay for, before it runs: the first `modelKeys`
/// entry with credentials (in pi, the provider's key as pi has it), else
/// what `modelFallback` allows; `None`: the offline model.
fn paid_model(services: &Services) -> Option<String> {
    let config = &services.config;
    if !(config.use_host_models && services.host.can_complete()) {
        return crate::model::select_model(&services.model_env())
            .ok()
            .map(|m| m.key().to_string());
    }
    for key in &config.model_keys {
        let Some((provider, _)) = key.split_once('/') else {
            continue;
        };
        if provider == LOCAL_PROVIDER {
            return None;
        }
        if services.host.api_key(provider).is_some() {
            return Some(key.clone());
        }
    }
    match config.model_fallback {
        ModelFallback::Offline => None,
        ModelFallback::Cheapest | ModelFallback::Session => Some(PIS_CHEAPEST.into()),
    }
}

/// Bulk indexing with a paid model asks first, with the estimate: the
/// sessions, their input tokens (each file up to `maxInputBytes`, 4 bytes a
/// token), and at most what that costs at the model's price. Pick: run with
/// the model (`--yes`), offline (`--offline`), or nothing. Without a
/// selector nothing is spent and the notice says how to go on.
fn ask_first(
    services: &Services,
    call: &CommandCall,
    todo: &[PathBuf],
    model: &str,
) -> CommandResult {
    let estimate = estimate(&services.config, todo, model);
    let again = |flag: &str| Action::Command {
        command: call.command.clone(),
        args: format!("{} {flag}", call.args.trim()),
    };
    if !call.ctx.can("select") {
        return failed(
            services,
            format!(
                "/{}: not indexing without asking ({estimate}): run /{} {YES} to spend it, or {OFFLINE}",
                call.command, call.command
            ),
        );
    }
    let options = vec![
        SelectOption {
            label: format!("Index with {model}"),
            actions: vec![again(YES)],
        },
        SelectOption {
            label: "Index with the offline model (free)".into(),
            actions: vec![again(OFFLINE)],
        },
        SelectOption {
            label: "Cancel".into(),
            actions: Vec::new(),
        },
    ];
    CommandResult {
        ok: true,
        message: Some(format!("session-index: {estimate}")),
        actions: vec![Action::Select {
            title: format!("session-index: index {estimate}?"),
            options,
        }],
        ..CommandResult::default()
    }
}

/// What indexing `files` with `model` costs at most, in words: `2 sessions,
/// about 3100 input tokens with openai/gpt-4.1-mini: at most $0.01` (each
/// file up to `maxInputBytes`, 4 bytes a token; `maxOutputTokens` each).
pub fn estimate(config: &Config, files: &[PathBuf], model: &str) -> String {
    let per_file = |p: &PathBuf| {
        let bytes = std::fs::metadata(p).map_or(0, |m| m.len());
        bytes.min(config.indexing.max_input_bytes as u64) / 4
    };
    let input: u64 = files.iter().map(per_file).sum();
    let output = files.len() as u64 * u64::from(config.indexing.max_output_tokens);
    let cost = match crate::model::price_for(config, model) {
        Some(_) => format!(
            "at most ${:.2}",
            crate::model::cost_usd(config, model, input, output)
        ),
        None => "its price is not known here".to_string(),
    };
    format!(
        "{} sessions, about {input} input tokens with {model}: {cost}",
        files.len()
    )
}

/// What the counts leave out while the index catches up (a first build).
pub fn left(report: &UpdateReport) -> String {
    match report.stale {
        0 => String::new(),
        n => format!("; {n} changed sessions are not in the index yet (counted once they are)"),
    }
}

fn done(services: &Services, text: String) -> CommandResult {
    services.host.notify(&text, NotifyLevel::Info);
    CommandResult {
        ok: true,
        message: Some(text),
        ..CommandResult::default()
    }
}

fn run(
    services: &Arc<Services>,
    todo: &[PathBuf],
    meta_dir: &Path,
    cancel: &AtomicBool,
    over_cap_ok: bool,
    offline: bool,
) {
    let total = todo.len();
    let (mut indexed, mut failures) = (0, 0);
    let mut stopped = None;
    for (n, path) in todo.iter().enumerate() {
        if cancel.load(Ordering::SeqCst) {
            stopped = Some("cancelled".to_string());
            break;
        }
        if let Some(reached) =
            crate::model::spend::over_cap(services.config.spending.daily_cap_usd, meta_dir)
                .filter(|_| !over_cap_ok)
        {
            stopped = Some(reached);
            break;
        }
        services.show_status("indexing", &format!("indexing {}/{total}", n + 1), false);
        let lock = RunLock::enter(path);
        let _held = lock.lock();
        let request = IndexRequest {
            session_file: path.clone(),
            meta_dir: meta_dir.to_path_buf(),
            leaf_id: None,
            force: true,
            offline,
            replace: crate::store::meta::Replace::KeepModelWritten,
            past_cap: over_cap_ok,
        };
        match index_session(&services.model_env(), &request, &|| {}) {
            Ok(IndexOutcome::Indexed(done)) => {
                indexed += 1;
                if let Some(reason) = &done.fallback_reason {
                    report::offline_notice(services, meta_dir, reason);
                }
            }
            // Sessions that privacy.exclude keeps out, or whose model-written meta
            // the offline model leaves alone, are not failures.
            Ok(IndexOutcome::Skipped { .. } | IndexOutcome::Kept { .. })
            | Err(job::Failure {
                error: job::IndexError::Excluded(_),
                ..
            }) => {}
            // Another process spent up to the cap meanwhile.
            Err(job::Failure {
                error: job::IndexError::Model(ModelError::OverCap(reached)),
                ..
            }) => {
                stopped = Some(reached);
                break;
            }
            Err(failure) => {
                failures += 1;
                tracing::warn!("bulk indexing {}: {}", path.display(), failure.error);
            }
        }
    }
    if let Ok(mut bulk) = services.bulk.lock() {
        // Only this run's flag: a newer run may have started after a cancel.
        if bulk
            .as_ref()
            .is_some_and(|c| std::ptr::eq(Arc::as_ptr(c), cancel))
        {
            *bulk = None;
        }
    }
    let mut text = format!("bulk indexing: {indexed}/{total} indexed");
    if failures > 0 {
        text.push_str(&format!(", {failures} failed (see the log)"));
    }
    if let Some(why) = stopped {
        text.push_str(&format!("; stopped: {why}"));
    }
    services.show_status("indexing", &text, true);
    services
        .host
        .notify(&format!("session-index {text}"), NotifyLevel::Info);
}
