//! The plugin inside its host: the FFI boundary ([`ffi`], where every entry
//! point catches panics), the router of every event, tool and command
//! ([`router`]), the plugin's state ([`state`]), the safe view of the host
//! ([`host`]), background jobs, logging and the one
//! status-line entry.

pub mod ffi;
pub mod host;
pub mod jobs;
pub mod logging;
pub mod router;
pub mod state;
pub mod status;
