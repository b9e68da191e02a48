//! Summarize: what turns a session into its meta file (the job, its prompts
//! and the offline model), the `agent_end` trigger, and the reporting of a
//! run to the host. `/index-session` and `/index-all` are commands
//! ([`crate::features::commands`]) built on it.

pub mod extractive;
pub mod job;
pub mod report;
pub mod summary;

use std::sync::Arc;

use pi_ext_abi::protocol::SessionContext;

use crate::plugin::host::NotifyLevel;
use crate::plugin::state::Services;

pub use job::{index_parsed, index_session, IndexError, IndexOutcome, IndexRequest, Indexed};
pub use report::{run_reported, ENTRY_TYPE};
pub use summary::IndexSummary;

/// `agent_end`: decide whether to index and queue the background job. Returns at once.
///
/// The threshold needs the session file, so it is checked in the job (off the
/// host's event thread); a run below it has no effects at all.
pub fn on_agent_end(services: &Arc<Services>, ctx: &SessionContext) {
    if !services.config_ok() || !services.config.indexing.auto {
        return;
    }
    let Some(session_file) = ctx.session_file.clone().filter(|f| !f.is_empty()) else {
        tracing::debug!("not indexing an ephemeral session");
        return;
    };
    if services
        .config
        .privacy
        .excludes(&ctx.cwd, std::path::Path::new(&session_file))
    {
        return;
    }
    if let Some(reached) = crate::model::spend::over_cap(
        services.config.spending.daily_cap_usd,
        &services.meta_dir(ctx),
    ) {
        if !services
            .cap_noticed
            .swap(true, std::sync::atomic::Ordering::SeqCst)
        {
            let text = format!(
                "session-index: {reached}; automatic indexing is paused until tomorrow (UTC)"
            );
            services.host.notify(&text, NotifyLevel::Warning);
        }
        return;
    }
    let key = ctx
        .session_id
        .clone()
        .unwrap_or_else(|| session_file.clone());
    let weak = Arc::downgrade(services);
    let ctx = ctx.clone();
    let submitted = services.jobs.submit(&key, move || {
        let Some(services) = weak.upgrade() else {
            return;
        };
        // Failures are already reported to the host (entry + status).
        let _ = run_serialized(&services, &ctx, Run::Automatic);
    });
    tracing::debug!(session = %key, ?submitted, "agent_end indexing trigger");
}

/// Index the session of `ctx` once no other run of it is in progress.
///
/// `/index-session` runs on the command thread, outside the background job
/// that `agent_end` started; run side by side, both read the same previous
/// meta and session name, and both rename and report. The request is built
/// only once the lock is held: the host's context call is then answered after
/// the previous run's effects (session name, entries), which a serving host
/// applies asynchronously, so this run reads the meta and the session name
/// that run left and continues from its leaf.
pub(crate) fn run_serialized(
    services: &Arc<Services>,
    ctx: &SessionContext,
    run: Run,
) -> Result<IndexOutcome, job::Failure> {
    let lock = report::RunLock::enter(std::path::Path::new(
        ctx.session_file.as_deref().unwrap_or_default(),
    ));
    let _held = lock.lock();
    let request = request_for(services, ctx, run);
    run_reported(services, &request)
}

/// What started a run.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Run {
    /// `agent_end`: only past the threshold, within the daily cap.
    Automatic,
    /// `/index-session`: now; past the cap when the user chose to.
    Command { past_cap: bool },
}

/// The request for the session of `ctx`, on its current leaf: the live
/// context when it is still the same session (the leaf may have moved since
/// the trigger), else the one captured.
fn request_for(services: &Services, ctx: &SessionContext, run: Run) -> IndexRequest {
    let live = services.host.context();
    let leaf_id = if live.session_file == ctx.session_file {
        live.leaf_id
    } else {
        ctx.leaf_id.clone()
    };
    IndexRequest {
        session_file: ctx.session_file.clone().unwrap_or_default().into(),
        meta_dir: services.meta_dir(ctx),
        leaf_id,
        force: matches!(run, Run::Command { .. }),
        offline: false,
        replace: crate::store::meta::Replace::KeepModelWritten,
        past_cap: matches!(run, Run::Command { past_cap: true }),
    }
}
