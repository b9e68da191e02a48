//! Semantic ranking inside pi: the search index's pending passages embedded
//! in the background, when the model is installed (`session-index model
//! install`). One job per agent directory, on one encoder thread of its own
//! at the lowest CPU priority (queries rank on another), in slices
//! of [`SLICE`] (a slice re-runs the job while passages are left, so a
//! shutdown waits for one slice at most and stops the rest), the status line
//! saying how many are left. Queries never wait for it: they rank with what
//! is embedded.

use std::sync::Arc;
use std::time::Duration;

use pi_ext_abi::protocol::SessionContext;

use crate::features::semantic::Semantic;
use crate::plugin::state::Services;
use crate::store::Store;

/// The most one run of the job embeds for.
const SLICE: Duration = Duration::from_secs(5);
/// The status line's owner.
const STATUS: &str = "embedding";

/// Start (or fold into a running one) the embedding job of `ctx`'s agent directory.
pub fn embed_in_background(services: &Arc<Services>, ctx: &SessionContext) {
    let agent_dir = services.agent_dir(ctx);
    // Cheap (file sizes): semantic search off or no model, no job.
    if Semantic::of(&agent_dir, &services.config.search)
        .model()
        .is_none()
    {
        return;
    }
    let key = format!("store-embed:{}", agent_dir.display());
    let weak = Arc::downgrade(services);
    let ctx = ctx.clone();
    services.jobs.submit(&key, move || {
        let Some(services) = weak.upgrade() else {
            return;
        };
        if embed_slice(&services, &agent_dir) {
            embed_in_background(&services, &ctx);
        }
    });
}

/// Embed for at most [`SLICE`]; whether to go on (passages are left and
/// this slice got some done).
fn embed_slice(services: &Arc<Services>, agent_dir: &std::path::Path) -> bool {
    let opened = Store::open_configured(agent_dir, &services.config);
    let mut index = match opened {
        Ok(index) => index,
        Err(e) => {
            tracing::warn!("embedding: {e}");
            return false;
        }
    };
    let Some(encoder) = index.background_encoder() else {
        return false;
    };
    match index.embed_pending(&encoder, Some(SLICE), &mut |_| {}) {
        Ok(report) if report.pending > 0 => {
            let text = format!(
                "session-index: embedding sessions for semantic search, {} turns left",
                report.pending
            );
            services.show_status(STATUS, &text, false);
            report.rows > 0
        }
        Ok(_) => {
            services.clear_status(STATUS);
            false
        }
        Err(e) => {
            tracing::warn!("embedding: {e}");
            services.clear_status(STATUS);
            false
        }
    }
}
