//! The integration tests: one binary, a module per area, in the order data
//! flows through the plugin (as `src/` is laid out). Shared helpers are the
//! `support` module. Each module's doc says what it runs against: real pi
//! session files, the real cdylib through the ABI, real processes sharing
//! real SQLite and meta files, mock providers over loopback, the real pi.

mod support;

mod cli;
mod commands;
mod e2e_pi;
mod model;
mod plugin;
mod query;
mod readme_config;
mod redaction_leaks;
mod references;
mod resolve;
mod search_eval;
mod search_model;
mod search_tool;
mod session;
mod store;
mod summarize;
mod trust;
