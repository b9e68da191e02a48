//! session-index: session memory for the pi coding agent, as a dynamically
//! loaded `pi-ext-abi` plugin.
//!
//! Data flows one way through the modules:
//! session file → [`session`] (parsed branch) → [`views`] (index text, query
//! windows) → [`model`] (cheap model; the offline extractive one is indexing::extractive) → validated result
//! → [`meta`] (atomic store) → host effects via [`host`].
//! [`indexing`], [`references`] and [`query`] are the three features built on
//! that flow; [`plugin`] routes host calls to them and [`ffi`] is the boundary.

/// Where the shared pi-session fixtures are, for unit tests (the same file
/// the integration tests include).
#[cfg(test)]
#[path = "../tests/support/shared_dir.rs"]
mod shared_dir;

pub mod app;
pub mod catalog;
pub mod commands;
pub mod config;
pub mod error_code;
mod ffi;
pub mod host;
pub mod indexing;
pub mod jobs;
pub mod logging;
pub mod mentions;
pub mod meta;
pub mod model;
pub mod plugin;
pub mod query;
pub mod redact;
pub mod references;
pub mod runtime;
pub mod search;
pub mod session;
pub mod spend;
pub mod status;
pub mod text;
pub mod time;
pub mod views;

pub use ffi::get_library;
