//! The plugin's state: [`Services`], what lives as long as the plugin
//! instance (host handle, config, HTTP client, background jobs, the session
//! catalog, the status line, money spent), and [`TurnState`], what starts
//! again with every agent run (the tools' call counters).

use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use pi_ext_abi::protocol::SessionContext;

use crate::config::Config;
use crate::plugin::host::Host;
use crate::plugin::jobs::Jobs;
use crate::plugin::status::StatusLine;
use crate::resolve::Catalog;

/// The name of the thread that clears an auto-cleared status.
const STATUS_TIMER_THREAD: &str = "session-index-status";

/// What every feature may use, for as long as the plugin instance lives.
pub struct Services {
    pub host: Host,
    /// The effective config (the default when the file was invalid).
    pub config: Config,
    /// Problems found in the config file (`path: message`, saying what applies instead).
    pub config_problems: Vec<String>,
    /// False when the config file cannot be used: the features that read
    /// sessions or spend stay off ([`crate::config::Loaded::usable`]).
    pub config_usable: bool,
    /// The host could not use the config file (its problem names the file).
    pub config_unreadable: bool,
    /// Directory of the plugin's `plugin.toml`.
    pub plugin_dir: PathBuf,
    /// The HTTP client of the provider calls ([`crate::model::http::client`]).
    pub http: ureq::Agent,
    pub jobs: Jobs,
    /// In-memory index of sessions and meta files, shared by `@@` references and query_session.
    pub catalog: Catalog,
    /// The one status-line entry all features share.
    pub status: StatusLine,
    /// Money this process spent on models (this pi session).
    pub spent: Mutex<crate::model::spend::Spent>,
    /// The cancel flag of the running bulk index (`/index-all`), if one runs.
    pub bulk: Mutex<Option<Arc<std::sync::atomic::AtomicBool>>>,
    /// Automatic indexing was paused by the daily cap (noticed once).
    pub cap_noticed: std::sync::atomic::AtomicBool,
    /// The current agent run's counters.
    pub turn: TurnState,
}

/// The tools whose calls per agent run are limited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tool {
    QuerySession,
    SearchSessions,
}

/// What starts again with every agent run: the calls each tool has made.
#[derive(Debug, Default)]
pub struct TurnState {
    query_calls: AtomicU32,
    search_calls: AtomicU32,
}

impl TurnState {
    /// A new agent run (`before_agent_start`): no tool has been called.
    pub fn start(&self) {
        self.query_calls.store(0, Ordering::SeqCst);
        self.search_calls.store(0, Ordering::SeqCst);
    }

    /// Count a call of `tool`: false when `limit` calls were made this run
    /// already (the refused call counts too).
    pub fn take_call(&self, tool: Tool, limit: u32) -> bool {
        self.calls(tool).fetch_add(1, Ordering::SeqCst) < limit
    }

    /// Give back a call that cost nothing (it could not run).
    pub fn give_back(&self, tool: Tool) {
        self.calls(tool).fetch_sub(1, Ordering::SeqCst);
    }

    fn calls(&self, tool: Tool) -> &AtomicU32 {
        match tool {
            Tool::QuerySession => &self.query_calls,
            Tool::SearchSessions => &self.search_calls,
        }
    }
}

impl Services {
    pub fn new(host: Host, plugin_dir: PathBuf, config_json: &str) -> Arc<Services> {
        let crate::config::Loaded {
            config,
            problems: config_problems,
            usable: config_usable,
        } = crate::config::load(config_json);
        // The host hands over a string when it could not use the file.
        let config_unreadable = matches!(
            serde_json::from_str::<serde_json::Value>(config_json),
            Ok(serde_json::Value::String(_))
        );
        let catalog = Catalog::with_fuzzy_threshold(config.references.fuzzy_threshold)
            .excluding(&config.privacy)
            .with_search(config.search.enabled)
            .with_semantic(config.search.semantic);
        Arc::new(Services {
            host,
            config,
            config_problems,
            config_usable,
            config_unreadable,
            plugin_dir,
            http: crate::model::http::client(),
            jobs: Jobs::default(),
            catalog,
            status: StatusLine::default(),
            spent: Mutex::default(),
            bulk: Mutex::default(),
            cap_noticed: Default::default(),
            turn: TurnState::default(),
        })
    }

    /// What the model layer may use of the services.
    pub fn model_env(&self) -> crate::model::ModelEnv<'_> {
        crate::model::ModelEnv {
            config: &self.config,
            host: Some(&*self.host),
            http: &self.http,
            spent: Some(&self.spent),
        }
    }

    /// True when the config file can be used (features that write must check this).
    pub fn config_ok(&self) -> bool {
        self.config_usable
    }

    /// The config's problems as one warning naming the file (the one the
    /// bridge hands over: `$PI_EXT_CONFIG`, else the user's in the agent
    /// directory, else the package's) and what applies; `None` without problems.
    pub fn config_warning(&self, ctx: &SessionContext) -> Option<String> {
        if self.config_problems.is_empty() {
            return None;
        }
        let problems = self.config_problems.join("; ");
        if self.config_unreadable {
            return Some(format!(
                "session-index config is invalid, indexing is off: {problems}"
            ));
        }
        let user = self.agent_dir(ctx).join("session-index.config.json");
        let file = std::env::var_os("PI_EXT_CONFIG")
            .map(PathBuf::from)
            .or_else(|| user.is_file().then_some(user))
            .unwrap_or_else(|| self.plugin_dir.join("session-index.config.json"));
        let file = crate::text::home_relative(&file.to_string_lossy());
        Some(match self.config_usable {
            true => {
                format!("session-index config {file}: {problems}. The rest of the config applies.")
            }
            false => format!("session-index config {file} is invalid, indexing is off: {problems}"),
        })
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
        // A sleeping thread per auto-cleared status: they come at the end of an
        // indexing run or a query, a few a minute at most. A weak handle: the
        // timer must not keep the Services alive past shutdown.
        let weak = Arc::downgrade(self);
        let timer = std::thread::Builder::new()
            .name(STATUS_TIMER_THREAD.into())
            .spawn(move || {
                std::thread::sleep(std::time::Duration::from_millis(delay));
                let Some(services) = weak.upgrade() else {
                    return;
                };
                services.status.clear_if_current(generation, || {
                    services.host.set_status(&services.config.status_key, None)
                });
            });
        if let Err(error) = timer {
            // The status stays until the next one replaces it.
            tracing::warn!("cannot start the status line's timer: {error}");
        }
    }

    /// Clear the status if `owner` showed the current one (never another feature's).
    pub fn clear_status(&self, owner: &'static str) {
        self.status.clear_if_owner(owner, || {
            self.host.set_status(&self.config.status_key, None)
        });
    }
}
