//! session-index: session memory for the pi coding agent, as a dynamically
//! loaded `pi-ext-abi` plugin.
//!
//! The modules are laid out in the order data flows through them, from a pi
//! session file to what the host shows:
//!
//! - [`config`]: the strict `session-index.config.json`, read once.
//! - [`session`]: the one reader of pi session files (header, summary and
//!   full-tree tiers, appended lines) and its text [`session::views`].
//! - [`redact`]: the one redaction pass over session text, before any cut and
//!   before anything reaches a model, the store or an output.
//! - [`store`]: what is known about every session, one
//!   [`store::SessionRecord`] each: the SQLite file
//!   (`sessions-index/index.sqlite`, updated from the session files and
//!   searched), its records in memory, and the meta files ([`store::meta`],
//!   `sessions-meta/<id>.meta.json`). Every record leaving it passes the one
//!   gate ([`store::Gate`]: `privacy.exclude` and the sessions directory).
//! - [`resolve`]: `@@` references: their syntax in a prompt and their
//!   resolution to one session over the store's rows.
//! - [`model`]: the model providers, model selection and the spending ledger
//!   that caps them, given a [`model::ModelEnv`] (config, host, HTTP client).
//! - [`features`]: what the user sees: summarize (writes metas), `@@`
//!   references, `query_session`, `search_sessions` and the commands.
//! - [`plugin`]: the plugin inside a host: the FFI boundary, the router of
//!   every event, tool and command, the plugin's state (services for its
//!   life, a turn's counters), its host, background jobs, HTTP client, logging
//!   and status line.
//!
//! [`text`], [`time`] and [`error_code`] are leaf helpers every layer uses.

/// Where the shared pi-session fixtures are, for unit tests (the same file
/// the integration tests include).
#[cfg(test)]
#[path = "../tests/support/shared_dir.rs"]
mod shared_dir;

pub mod config;
pub mod error_code;
pub mod features;
pub mod model;
pub mod plugin;
pub mod redact;
pub mod resolve;
pub mod session;
pub mod store;
pub mod text;
pub mod time;

pub use plugin::ffi::get_library;
