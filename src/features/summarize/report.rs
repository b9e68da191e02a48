//! Host effects of an indexing run: the status line, the session name and a
//! `session-index:index` entry for every attempt.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde_json::{json, Value};

use super::job::{index_session, Failure, IndexOutcome, IndexRequest, Indexed};
use crate::model::LOCAL_PROVIDER;
use crate::plugin::host::NotifyLevel;
use crate::plugin::state::Services;
use crate::store::meta::{ModelChoice, SessionMeta};
use crate::text::one_line;
use crate::time::iso_now;

pub use super::job::ENTRY_TYPE;

/// Run an index with all host effects; a skipped run (below the threshold,
/// or a model's meta the offline model would replace) has none.
/// Callers in the plugin hold the session's [`RunLock`].
pub fn run_reported(
    services: &Arc<Services>,
    request: &IndexRequest,
) -> Result<IndexOutcome, Failure> {
    let started = || services.show_status("indexing", "indexing…", false);
    let outcome = index_session(&services.model_env(), request, &started);
    match &outcome {
        Ok(IndexOutcome::Skipped {
            session_id,
            new_user_messages,
        }) => {
            tracing::debug!(session = %session_id, new_user_messages, "not indexing: below minNewUserMessages");
        }
        Ok(IndexOutcome::Kept { session_id, model }) => {
            tracing::debug!(session = %session_id, "not indexing offline: {model} wrote its meta");
            services.clear_status("indexing");
        }
        // The model layer recorded what it cost in the ledger.
        Ok(IndexOutcome::Indexed(indexed)) => report_success(services, &request.meta_dir, indexed),
        Err(failure) => report_failure(services, failure),
    }
    outcome
}

fn report_success(services: &Arc<Services>, meta_dir: &Path, indexed: &Indexed) {
    let meta = &indexed.meta;
    if let Some(reason) = &indexed.fallback_reason {
        offline_notice(services, meta_dir, reason);
    }
    // The name a user set is never replaced; the meta file took it too.
    if !indexed.user_named && indexed.previous_session_name.as_deref() != Some(meta.name.as_str()) {
        services.host.set_session_name(&meta.name);
    }
    let usage = meta.usage.clone().unwrap_or_default();
    services.host.append_entry(
        ENTRY_TYPE,
        &json!({
            "success": true,
            "sessionId": meta.session_id,
            "model": meta.model,
            "timestamp": iso_now(),
            "usage": usage,
        }),
    );
    tracing::info!(
        session = %meta.session_id,
        model = %meta.model,
        incremental = indexed.incremental,
        input_tokens = usage.input_tokens,
        output_tokens = usage.output_tokens,
        attempts = indexed.attempts,
        "indexed session"
    );
    let text = match meta
        .model_choice
        .as_ref()
        .filter(|c| **c != ModelChoice::Offline)
        .map(ModelChoice::label)
    {
        Some(why) => format!("indexed ({} by {}: {why})", cost_label(meta), meta.model),
        None => format!("indexed ({})", cost_label(meta)),
    };
    services.show_status("indexing", &text, true);
}

/// `$0.0012` for a priced model; `offline` for the local model, whose zero
/// cost would read like a free remote call.
pub fn cost_label(meta: &SessionMeta) -> String {
    if meta.model.split('/').next() == Some(LOCAL_PROVIDER) {
        return "offline".to_string();
    }
    format!("${:.4}", meta.usage.as_ref().map_or(0.0, |u| u.cost_usd))
}

fn report_failure(services: &Arc<Services>, failure: &Failure) {
    let reason = failure.error.to_string();
    let mut data = json!({
        "success": false,
        "sessionId": failure.session_id,
        "model": failure.model,
        "timestamp": iso_now(),
        "error": reason,
    });
    if let (Value::Object(map), None) = (&mut data, &failure.session_id) {
        map.remove("sessionId");
    }
    services.host.append_entry(ENTRY_TYPE, &data);
    tracing::warn!(session = ?failure.session_id, model = ?failure.model, "indexing failed: {reason}");
    services.show_status(
        "indexing",
        &format!("index failed: {}", one_line(&reason, 160)),
        true,
    );
}

/// The [`RunLock`] mutexes, by absolute session file.
static RUN_LOCKS: Mutex<BTreeMap<PathBuf, Arc<Mutex<()>>>> = Mutex::new(BTreeMap::new());

/// One in-process mutex per session file, dropped from the map when unused:
/// index runs of one session never overlap (see `super::run_serialized`).
pub struct RunLock {
    key: PathBuf,
    mutex: Arc<Mutex<()>>,
}

impl RunLock {
    pub fn enter(session_file: &Path) -> RunLock {
        let key = std::path::absolute(session_file).unwrap_or_else(|_| session_file.to_path_buf());
        let mutex = match RUN_LOCKS.lock() {
            Ok(mut map) => map.entry(key.clone()).or_default().clone(),
            // A poisoned map only loses the serialization, never the index.
            Err(_) => Arc::default(),
        };
        RunLock { key, mutex }
    }

    pub fn lock(&self) -> MutexGuard<'_, ()> {
        // A run that panicked left nothing half-done that the lock protects.
        self.mutex.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for RunLock {
    fn drop(&mut self) {
        if let Ok(mut map) = RUN_LOCKS.lock() {
            // The map's own reference plus ours: nobody else waits on this session.
            if Arc::strong_count(&self.mutex) <= 2 {
                map.remove(&self.key);
            }
        }
    }
}

/// Where the offline notice's "shown" mark lives: `<agent dir>/session-index/`.
const OFFLINE_NOTICE_MARK: &str = "session-index/offline-notice-shown";

/// Indexing went offline because no chosen model is usable: logged once per
/// process, and shown to the user once (a mark in the agent directory) with
/// how to choose a model.
pub fn offline_notice(services: &Services, meta_dir: &Path, reason: &str) {
    static LOGGED: AtomicBool = AtomicBool::new(false);
    if !LOGGED.swap(true, Ordering::SeqCst) {
        tracing::warn!("using the offline model local/extractive because {reason}");
    }
    let Some(mark) = meta_dir
        .parent()
        .map(|agent| agent.join(OFFLINE_NOTICE_MARK))
    else {
        return;
    };
    // Created, never followed or overwritten: the one process that creates it shows the notice.
    let created = mark
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| {
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&mark)
        });
    match created {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return,
        Err(e) => tracing::warn!("cannot write {}: {e}", mark.display()),
    }
    services
        .host
        .notify(&offline_notice_text(reason), NotifyLevel::Warning);
}

/// The notice: what happened, why, and the two ways to choose a model.
fn offline_notice_text(reason: &str) -> String {
    format!(
        "session-index indexes with the offline model (free, extractive) because {}. \
         To index with a model, list it first in \"modelKeys\" in ~/.pi/agent/session-index.config.json, \
         or set \"modelFallback\": \"cheapest\" (pi's cheapest logged-in model) or \"session\" \
         (also the session's own model). Shown once.",
        one_line(reason, 300)
    )
}
