//! `session-index index`: write meta files for sessions, outside pi.
//!
//! Uses the offline model unless a configured model is available (API key in
//! the environment), exactly as the plugin would. Meta files are users' data:
//! a session whose meta is up to date (same leaf) is skipped, and a meta file
//! a model wrote is never replaced by an offline one, unless `--force`.

use std::path::{Path, PathBuf};

use clap::Args;
use serde_json::{json, Value};
use session_index::features::summarize::{index_parsed, IndexError, IndexOutcome, IndexRequest};
use session_index::model::{self, ModelEnv, ModelError};
use session_index::session::{self, discovery, Session, SessionError};
use session_index::store::meta;

use crate::args::{self as shared, out, AgentDir};
use crate::Failure;

#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  session-index index --all                  every session that changed since its last index\n  \
session-index index rate-limiter 019a3f2b  two sessions, by name slug and by id prefix\n  \
session-index index --all --offline --force   rewrite every meta file with the offline model"
)]
pub struct IndexArgs {
    #[command(flatten)]
    agent: AgentDir,
    /// Index every session under <agent dir>/sessions.
    #[arg(long, conflicts_with = "sessions")]
    all: bool,
    /// Always use the offline model `local/extractive`.
    #[arg(long)]
    offline: bool,
    /// Also re-index up-to-date sessions, and let the offline model replace a meta file a model wrote.
    #[arg(long)]
    force: bool,
    /// Spend past the daily cap (spending.dailyCapUsd) for this run.
    #[arg(long)]
    over_cap: bool,
    /// Spend on the model without asking (the estimate is asked about on a terminal; needed without one).
    #[arg(long)]
    yes: bool,
    /// Print the summary as one JSON document.
    #[arg(long)]
    json: bool,
    /// Also list the sessions skipped (up to date, not a session, …), one line each.
    #[arg(short, long)]
    verbose: bool,
    /// A session-index.config.json (default: <agent dir>/session-index.config.json if present, else built-in defaults).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Sessions to index: files, or references as after `@@` (id, id prefix, name, slug).
    #[arg(value_name = "SESSION")]
    sessions: Vec<String>,
}

/// Prints what was indexed, skipped and failed; fails when any session could not be indexed.
pub fn run(args: IndexArgs) -> Result<(), Failure> {
    let agent_dir = args.agent.path()?;
    if !args.all && args.sessions.is_empty() {
        return Err(Failure::Usage(
            "nothing to index: pass --all or sessions (files or references)".into(),
        ));
    }
    session_index::plugin::logging::to_stderr("session-index index");
    let config = shared::config(args.config.as_deref(), &agent_dir)?;
    let sessions_dir = agent_dir.join("sessions");
    let files: Vec<(String, Result<PathBuf, String>)> = if args.all {
        discovery::session_files(&sessions_dir)
            .into_iter()
            .map(|f| (f.display().to_string(), Ok(f)))
            .collect()
    } else {
        args.sessions
            .iter()
            .cloned()
            .zip(shared::session_files(&agent_dir, &args.sessions))
            .collect()
    };
    // No host outside pi: API keys come from the environment. Whether this
    // run writes offline metas does not depend on the session.
    let http = model::http::client();
    let env = ModelEnv {
        config: &config,
        host: None,
        http: &http,
        spent: None,
    };
    let offline = args.offline || model::select_model(&env).is_err();
    let meta_dir = agent_dir.join("sessions-meta");
    if !offline && !args.yes && !spending_agreed(&env, &files, &meta_dir, args.force)? {
        out("Nothing indexed.\n");
        return Ok(());
    }
    // Once the daily cap stops a session, the rest are not tried.
    let mut capped: Option<String> = None;
    let mut report: Vec<(&str, Value)> = Vec::new();
    for (given, file) in files {
        let entry = match (file, &capped) {
            (Ok(_), Some(reached)) => (
                "skipped",
                json!({ "sessionFile": given, "reason": reached }),
            ),
            // The containment rule of every reader: regular files inside the sessions directory.
            (Ok(file), None) => match regular_files::inside(&sessions_dir, &file) {
                Ok(_) => index_one(&env, &file, &meta_dir, &args),
                Err(e) => (
                    "failed",
                    json!({ "sessionFile": given, "error": format!("{}: {e}", file.display()) }),
                ),
            },
            (Err(error), _) => ("failed", json!({ "sessionFile": given, "error": error })),
        };
        let entry = match entry {
            ("capped", v) => {
                let reached = format!(
                    "{}; not indexed (--over-cap spends anyway, --offline indexes for free)",
                    v["error"].as_str().unwrap_or_default()
                );
                capped = Some(reached.clone());
                (
                    "skipped",
                    json!({ "sessionFile": v["sessionFile"], "reason": reached }),
                )
            }
            other => other,
        };
        report.push(entry);
    }
    let of = |kind: &str| {
        report
            .iter()
            .filter(|(k, _)| *k == kind)
            .map(|(_, v)| v.clone())
            .collect::<Vec<_>>()
    };
    let (indexed, skipped, failed) = (of("indexed"), of("skipped"), of("failed"));
    let cost = indexed
        .iter()
        .filter_map(|i| i["usage"]["costUsd"].as_f64())
        .fold(0.0, |a, b| a + b);
    if args.json {
        let summary = json!({
            "agentDir": agent_dir.to_string_lossy(),
            "metaDir": meta_dir.to_string_lossy(),
            "indexed": indexed,
            "skipped": skipped,
            "failed": failed,
            "costUsd": cost,
        });
        out(&format!(
            "{}\n",
            serde_json::to_string_pretty(&summary).map_err(|e| e.to_string())?
        ));
    } else {
        // What was done; the skips only when asked for (`index --all` skips most).
        let shown = report
            .iter()
            .filter(|(kind, _)| args.verbose || *kind != "skipped");
        for (kind, v) in shown {
            let text = |key: &str| v[key].as_str().unwrap_or_default().to_string();
            let what = match *kind {
                "indexed" => format!("{} ({})", text("name"), text("model")),
                "skipped" => text("reason"),
                _ => text("error"),
            };
            out(&format!("{kind:<8} {}: {what}\n", text("sessionFile")));
        }
        let (i, s, f) = (indexed.len(), skipped.len(), failed.len());
        let skips = if s > 0 && !args.verbose {
            " (-v lists them)"
        } else {
            ""
        };
        out(&format!(
            "{i} indexed (${cost:.4}), {s} skipped{skips}, {f} failed; meta files in {}\n",
            meta_dir.display()
        ));
        // Why the run stopped spending is no routine skip: said whatever -v.
        if let Some(reached) = &capped {
            out(&format!("stopped: {reached}\n"));
        }
    }
    match failed.len() {
        0 => Ok(()),
        n => Err(Failure::Failed(format!(
            "{n} of {} session(s) could not be indexed",
            report.len()
        ))),
    }
}

/// A run that would call a paid model shows the estimate first (the
/// sessions it would index, their input tokens, at most what that costs) and
/// asks on the terminal; without one it stops unless `--yes`.
fn spending_agreed(
    env: &ModelEnv,
    files: &[(String, Result<PathBuf, String>)],
    meta_dir: &Path,
    force: bool,
) -> Result<bool, Failure> {
    let Ok(model) = model::select_model(env) else {
        return Ok(true);
    };
    let todo: Vec<PathBuf> = files
        .iter()
        .filter_map(|(_, file)| file.as_ref().ok())
        .filter(|file| matches!(to_index(file, meta_dir, force), Ok(ToIndex::Yes(_))))
        .cloned()
        .collect();
    if todo.is_empty() {
        return Ok(true);
    }
    let estimate =
        session_index::features::commands::index_all::estimate(env.config, &todo, model.key());
    let without_terminal =
        format!("not spending without asking ({estimate}): pass --yes to spend it, or --offline");
    crate::args::ask(&format!("Index {estimate}?"), &without_terminal)
}

/// Index one session file unless [`to_index`] says not to: the outcome and its JSON.
fn index_one(
    env: &ModelEnv,
    file: &Path,
    meta_dir: &Path,
    args: &IndexArgs,
) -> (&'static str, Value) {
    let shown = file.to_string_lossy();
    let session = match to_index(file, meta_dir, args.force) {
        Ok(ToIndex::Yes(session)) => session,
        Ok(ToIndex::No(reason)) => {
            return ("skipped", json!({ "sessionFile": shown, "reason": reason }))
        }
        Err(error) => return ("failed", json!({ "sessionFile": shown, "error": error })),
    };
    let session_file = file.to_path_buf();
    let request = IndexRequest {
        session_file,
        meta_dir: meta_dir.into(),
        leaf_id: None,
        force: true,
        offline: args.offline,
        replace: if args.force {
            meta::Replace::Any
        } else {
            meta::Replace::KeepModelWritten
        },
        past_cap: args.over_cap,
    };
    match index_parsed(env, &request, &session, &|| {}) {
        Ok(IndexOutcome::Indexed(done)) => {
            static SAID: std::sync::Once = std::sync::Once::new();
            if let Some(reason) = &done.fallback_reason {
                SAID.call_once(|| {
                    eprintln!("session-index index: using the offline model because {reason}")
                });
            }
            let meta = &done.meta;
            let (name, model, usage) = (&meta.name, &meta.model, &meta.usage);
            let v = json!({ "sessionId": meta.session_id, "sessionFile": shown, "metaFile": done.path, "name": name,
                "tags": meta.tags, "model": model, "incremental": done.incremental, "usage": usage });
            ("indexed", v)
        }
        Ok(IndexOutcome::Skipped { .. }) => (
            "skipped",
            json!({ "sessionFile": shown, "reason": "below the threshold" }),
        ),
        Ok(IndexOutcome::Kept { model, .. }) => (
            "skipped",
            json!({ "sessionFile": shown, "reason": kept_reason(&model) }),
        ),
        Err(failure) => {
            let error = failure.error.to_string();
            // The daily cap stops the run rather than failing every session after it.
            let kind = match failure.error {
                IndexError::Model(ModelError::OverCap(_)) => "capped",
                _ => "failed",
            };
            (
                kind,
                json!({ "sessionFile": shown, "model": failure.model, "error": error }),
            )
        }
    }
}

/// Whether to index a session file: its parsed session (read once, for the
/// run too), or why it is left alone.
enum ToIndex {
    Yes(Box<Session>),
    No(String),
}

/// A session file is left alone when it is not a pi session or its meta is
/// up to date. (A model's meta that an offline run would replace is kept by
/// the meta store itself: [`IndexOutcome::Kept`].)
fn to_index(file: &Path, meta_dir: &Path, force: bool) -> Result<ToIndex, String> {
    let session = match session::open(file) {
        Ok(session) => session,
        Err(SessionError::NotASession { reason, .. }) => {
            return Ok(ToIndex::No(format!("not a pi session ({reason})")))
        }
        Err(e) => return Err(e.to_string()),
    };
    let previous =
        meta::read_or_missing(meta_dir, &session.header.id).map_err(|e| e.to_string())?;
    let Some(previous) = previous.filter(|_| !force) else {
        return Ok(ToIndex::Yes(Box::new(session)));
    };
    if previous.last_indexed_leaf_id.is_some()
        && previous.last_indexed_leaf_id.as_deref() == session.default_leaf_id()
    {
        return Ok(ToIndex::No("up to date".into()));
    }
    Ok(ToIndex::Yes(Box::new(session)))
}

/// Why a model's meta is left alone by an offline run.
fn kept_reason(model: &str) -> String {
    format!("its meta was written by {model}; kept (--force replaces it with an offline one)")
}
