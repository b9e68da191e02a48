//! The plugin inside its host: the FFI boundary ([`ffi`], where every entry
//! point catches panics), the router of every event, tool and command
//! ([`router`]), the plugin's state ([`state`]), the safe view of the host
//! ([`host`]), background jobs, the plugin's own runtime, logging and the one
//! status-line entry.

pub mod ffi;
pub mod host;
pub mod jobs;
pub mod logging;
pub mod router;
pub mod runtime;
pub mod state;
pub mod status;
