//! The plugin's single status-line entry (`config.statusKey`), shared by
//! indexing, references and query_session.
//!
//! One generation counter for the one key: a delayed auto-clear fires only if
//! nothing newer was shown since, whichever feature showed it, and a feature
//! clears a status only while it is still the one it showed.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::app::App;

#[derive(Default)]
struct State {
    generation: u64,
    /// Which feature's text is showing; `None` once cleared.
    owner: Option<&'static str>,
}

/// Owned by [`App`]; use [`show`] and [`clear_if_owner`].
#[derive(Default)]
pub struct StatusLine {
    state: Mutex<State>,
}

impl StatusLine {
    pub fn new() -> Self {
        Self::default()
    }
}

/// Show `text` for `owner`; with `auto_clear`, clear it after
/// `notificationAutoClearMs` unless a newer status replaced it.
pub fn show(app: &Arc<App>, owner: &'static str, text: &str, auto_clear: bool) {
    let generation = {
        let Ok(mut state) = app.status.state.lock() else { return };
        state.generation += 1;
        state.owner = Some(owner);
        // Set while holding the lock so a pending clear cannot interleave.
        app.host.set_status(&app.config.status_key, Some(text));
        state.generation
    };
    let delay = app.config.notification_auto_clear_ms;
    if !auto_clear || delay == 0 {
        return;
    }
    // A weak handle: the timer must not keep the App alive past shutdown.
    let weak = Arc::downgrade(app);
    app.runtime.handle().spawn(async move {
        tokio::time::sleep(Duration::from_millis(delay)).await;
        let Some(app) = weak.upgrade() else { return };
        let Ok(mut state) = app.status.state.lock() else { return };
        if state.generation == generation {
            state.owner = None;
            app.host.set_status(&app.config.status_key, None);
        }
        drop(state);
    });
}

/// Clear the status if `owner` showed the current one (never another feature's).
pub fn clear_if_owner(app: &App, owner: &'static str) {
    if let Ok(mut state) = app.status.state.lock() {
        if state.owner == Some(owner) {
            state.generation += 1;
            state.owner = None;
            app.host.set_status(&app.config.status_key, None);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::{Effect, RecordingHost};

    fn app_with_clear_after(ms: u64) -> (Arc<App>, Arc<RecordingHost>) {
        let host = RecordingHost::new(Default::default());
        let config = format!(r#"{{"notificationAutoClearMs": {ms}}}"#);
        let app = App::new(host.clone(), std::env::temp_dir(), &config).unwrap();
        (app, host)
    }

    fn statuses(host: &RecordingHost) -> Vec<Option<String>> {
        host.effects()
            .into_iter()
            .filter_map(|e| match e {
                Effect::SetStatus { text, .. } => Some(text),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_delayed_clear_never_removes_another_features_newer_status() {
        let (app, host) = app_with_clear_after(100);
        show(&app, "query", "queried (…)", true);
        show(&app, "indexing", "indexing…", false);
        std::thread::sleep(Duration::from_millis(400));
        assert_eq!(statuses(&host), vec![Some("queried (…)".into()), Some("indexing…".into())]);
        clear_if_owner(&app, "references");
        assert_eq!(statuses(&host).len(), 2, "references never showed the current status");
    }

    #[test]
    fn the_latest_status_auto_clears_and_owners_clear_their_own() {
        let (app, host) = app_with_clear_after(50);
        show(&app, "indexing", "indexed (offline)", true);
        std::thread::sleep(Duration::from_millis(400));
        assert_eq!(statuses(&host).last(), Some(&None));
        show(&app, "references", "@@ 1 of 1 reference(s) unresolved", false);
        clear_if_owner(&app, "references");
        assert_eq!(statuses(&host).last(), Some(&None));
    }
}
