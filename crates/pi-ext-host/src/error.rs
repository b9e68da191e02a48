//! The host's errors. Every variant renders as one line that says what went
//! wrong and where, because the binary prints exactly that line on failure.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// plugin.toml is missing, unreadable, malformed or invalid (the message names file:line:col or the key).
    #[error("{0}")]
    Manifest(String),

    /// The plugin declares (or was built against) another major version of pi-ext-abi.
    #[error(
        "{location}: ABI version mismatch: this host speaks pi-ext-abi {host}, the plugin {how} pi-ext-abi {plugin}"
    )]
    AbiMismatch {
        location: String,
        host: String,
        plugin: String,
        /// "declares" (plugin.toml) or "was built against" (the library).
        how: &'static str,
    },

    /// No library file was found at any candidate path.
    #[error("plugin library not found; tried: {}", display_paths(.tried))]
    LibraryMissing { tried: Vec<PathBuf> },

    /// The file exists but is not a loadable pi-ext-abi plugin library.
    #[error("{path}: not a pi-ext-abi plugin library: {reason}", path = .path.display())]
    NotAPlugin { path: PathBuf, reason: String },

    /// The library is a plugin, but its types are laid out differently from the host's.
    #[error("{path}: incompatible plugin library: {reason}", path = .path.display())]
    Incompatible { path: PathBuf, reason: String },

    /// The session file is missing or not a pi session.
    #[error("{0}")]
    Session(String),

    /// The plugin refused or failed a call (its one-line message).
    #[error("{0}")]
    Plugin(String),

    /// The caller asked for something the plugin did not register, or passed bad arguments.
    #[error("{0}")]
    Usage(String),
}

fn display_paths(paths: &[PathBuf]) -> String {
    if paths.is_empty() {
        return "(no candidate paths)".to_string();
    }
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Collapse a multi-line message (abi_stable, libloading, panics) into one line.
pub fn one_line(text: &str) -> String {
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    const MAX: usize = 600;
    if joined.len() <= MAX {
        return joined;
    }
    let mut end = MAX;
    while !joined.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &joined[..end])
}
