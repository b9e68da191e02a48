//! Plugin-wide state shared by every feature: host handle, config, runtime,
//! background jobs, the session catalog and per-run counters.

use std::path::PathBuf;
use std::sync::atomic::AtomicU32;
use std::sync::{Arc, Mutex};

use pi_ext_abi::protocol::SessionContext;

use crate::config::Config;
use crate::plugin::host::Host;
use crate::plugin::jobs::Jobs;
use crate::plugin::runtime::Runtime;
use crate::plugin::status::StatusLine;
use crate::resolve::Catalog;

pub struct App {
    pub host: Host,
    /// The effective config (the default when the file was invalid).
    pub config: Config,
    /// Problems found in the config file (`path: message`); non-empty disables indexing.
    pub config_problems: Vec<String>,
    /// Directory of the plugin's `plugin.toml`.
    pub plugin_dir: PathBuf,
    pub runtime: Runtime,
    pub jobs: Jobs,
    /// In-memory index of sessions and meta files, shared by `@@` references and query_session.
    pub catalog: Catalog,
    /// The one status-line entry all features share.
    pub status: StatusLine,
    /// `query_session` calls made in the current agent run.
    pub query_calls_this_run: AtomicU32,
    /// Money this process spent on models (this pi session).
    pub spent: Mutex<crate::model::spend::Spent>,
    /// The cancel flag of the running bulk index (`/index-all`), if one runs.
    pub bulk: Mutex<Option<Arc<std::sync::atomic::AtomicBool>>>,
    /// Automatic indexing was paused by the daily cap (noticed once).
    pub cap_noticed: std::sync::atomic::AtomicBool,
    /// `search_sessions` calls made in the current agent run.
    pub search_calls_this_run: AtomicU32,
}

impl App {
    pub fn new(host: Host, plugin_dir: PathBuf, config_json: &str) -> Result<Arc<App>, String> {
        let (config, config_problems) = match crate::config::parse(config_json) {
            Ok(config) => (config, Vec::new()),
            Err(problems) => (Config::default(), problems),
        };
        let catalog = Catalog::with_fuzzy_threshold(config.references.fuzzy_threshold)
            .excluding(&config.privacy)
            .with_search(config.search.enabled);
        Ok(Arc::new(App {
            host,
            config,
            config_problems,
            plugin_dir,
            runtime: Runtime::new()?,
            jobs: Jobs::default(),
            catalog,
            status: StatusLine::default(),
            query_calls_this_run: AtomicU32::new(0),
            spent: Mutex::default(),
            bulk: Mutex::default(),
            cap_noticed: Default::default(),
            search_calls_this_run: AtomicU32::new(0),
        }))
    }

    /// True when the config file was valid (features that write must check this).
    pub fn config_ok(&self) -> bool {
        self.config_problems.is_empty()
    }

    /// The agent directory of a context, falling back to the host's current one.
    pub fn agent_dir(&self, ctx: &SessionContext) -> PathBuf {
        if ctx.agent_dir.is_empty() {
            PathBuf::from(self.host.context().agent_dir)
        } else {
            PathBuf::from(&ctx.agent_dir)
        }
    }

    /// `<agent dir>/sessions`: the only tree session references may read.
    pub fn sessions_dir(&self, ctx: &SessionContext) -> PathBuf {
        self.agent_dir(ctx).join("sessions")
    }

    /// `<agent dir>/sessions-meta`: where meta files live.
    pub fn meta_dir(&self, ctx: &SessionContext) -> PathBuf {
        self.agent_dir(ctx).join("sessions-meta")
    }

    /// Show `text` on the status line for `owner`; with `auto_clear`, clear it
    /// after `notificationAutoClearMs` unless a newer status replaced it.
    pub fn show_status(self: &Arc<Self>, owner: &'static str, text: &str, auto_clear: bool) {
        let key = &self.config.status_key;
        let Some(generation) = self
            .status
            .show(owner, || self.host.set_status(key, Some(text)))
        else {
            return;
        };
        let delay = self.config.notification_auto_clear_ms;
        if !auto_clear || delay == 0 {
            return;
        }
        // A weak handle: the timer must not keep the App alive past shutdown.
        let weak = Arc::downgrade(self);
        self.runtime.handle().spawn(async move {
            tokio::time::sleep(std::time::Duration::from_millis(delay)).await;
            let Some(app) = weak.upgrade() else { return };
            app.status.clear_if_current(generation, || {
                app.host.set_status(&app.config.status_key, None)
            });
        });
    }

    /// Clear the status if `owner` showed the current one (never another feature's).
    pub fn clear_status(&self, owner: &'static str) {
        self.status.clear_if_owner(owner, || {
            self.host.set_status(&self.config.status_key, None)
        });
    }
}
