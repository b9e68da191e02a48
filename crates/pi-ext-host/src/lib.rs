//! Reference host for pi-ext-abi plugins.
//!
//! Flow: [`manifest::Manifest::load`] reads `plugin.toml` and checks the
//! declared ABI major; [`loader::load_module`] finds and loads the library
//! (abi_stable checks the interface version and type layouts);
//! [`instance::PluginInstance`] instantiates the plugin with a
//! [`recording::RecordingHost`] and makes typed calls; the host records every
//! callback the plugin makes as an effect. [`cli`] is the `pi-ext-host` binary.

pub mod auth;
pub mod cli;
pub mod context;
pub mod error;
pub mod instance;
pub mod loader;
pub mod manifest;
pub mod recording;
pub mod serve;

pub use context::{resolve_agent_dir, session_context};
pub use error::HostError;
pub use instance::PluginInstance;
pub use manifest::Manifest;
pub use recording::RecordingHost;
