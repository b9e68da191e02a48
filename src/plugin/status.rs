//! The plugin's single status-line entry (`config.statusKey`), shared by
//! indexing, references and query_session.
//!
//! One generation counter for the one key: a delayed auto-clear fires only if
//! nothing newer was shown since, whichever feature showed it, and a feature
//! clears a status only while it is still the one it showed.

use std::sync::Mutex;

#[derive(Default)]
struct State {
    generation: u64,
    /// Which feature's text is showing; `None` once cleared.
    owner: Option<&'static str>,
}

/// Owned by `Services`, which shows and clears it (`Services::show_status`,
/// `Services::clear_status`); each change runs `apply` under the lock, so a
/// pending clear cannot interleave.
#[derive(Default)]
pub struct StatusLine {
    state: Mutex<State>,
}

impl StatusLine {
    /// `owner` shows a new status (`apply` sets it); its generation.
    pub fn show(&self, owner: &'static str, apply: impl FnOnce()) -> Option<u64> {
        let mut state = self.state.lock().ok()?;
        state.generation += 1;
        state.owner = Some(owner);
        apply();
        Some(state.generation)
    }

    /// Clear (`apply`) when nothing newer than `generation` was shown since.
    pub fn clear_if_current(&self, generation: u64, apply: impl FnOnce()) {
        if let Ok(mut state) = self.state.lock() {
            if state.generation == generation {
                state.owner = None;
                apply();
            }
        }
    }

    /// Clear (`apply`) if `owner` showed the current status (never another feature's).
    pub fn clear_if_owner(&self, owner: &'static str, apply: impl FnOnce()) {
        if let Ok(mut state) = self.state.lock() {
            if state.owner == Some(owner) {
                state.generation += 1;
                state.owner = None;
                apply();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use crate::plugin::host::{Effect, RecordingHost};
    use crate::plugin::state::Services;

    fn show(services: &Arc<Services>, owner: &'static str, text: &str, auto_clear: bool) {
        services.show_status(owner, text, auto_clear);
    }

    fn clear_if_owner(services: &Services, owner: &'static str) {
        services.clear_status(owner);
    }

    fn app_with_clear_after(ms: u64) -> (Arc<Services>, Arc<RecordingHost>) {
        let host = RecordingHost::new(Default::default());
        let config = format!(r#"{{"notificationAutoClearMs": {ms}}}"#);
        let services = Services::new(host.clone(), std::env::temp_dir(), &config);
        (services, host)
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
        let (services, host) = app_with_clear_after(100);
        show(&services, "query", "queried (…)", true);
        show(&services, "indexing", "indexing…", false);
        std::thread::sleep(Duration::from_millis(400));
        assert_eq!(
            statuses(&host),
            vec![Some("queried (…)".into()), Some("indexing…".into())]
        );
        clear_if_owner(&services, "references");
        assert_eq!(
            statuses(&host).len(),
            2,
            "references never showed the current status"
        );
    }

    #[test]
    fn the_latest_status_auto_clears_and_owners_clear_their_own() {
        let (services, host) = app_with_clear_after(50);
        show(&services, "indexing", "indexed (offline)", true);
        std::thread::sleep(Duration::from_millis(400));
        assert_eq!(statuses(&host).last(), Some(&None));
        show(
            &services,
            "references",
            "@@ 1 of 1 reference(s) unresolved",
            false,
        );
        clear_if_owner(&services, "references");
        assert_eq!(statuses(&host).last(), Some(&None));
    }
}
