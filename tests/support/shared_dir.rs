//! Where the shared pi-session fixtures live, for every test crate of the
//! workspace (included with `#[path]`): `$SESSION_INDEX_SHARED`, else
//! `shared/` beside the workspace (the CI layout), else `/work/shared`.
//! The fixtures are read in place and never copied into the repository.

#![allow(dead_code)] // each test binary uses a different subset

use std::path::{Path, PathBuf};

/// The `shared/` folder holding `fixtures/pi-sessions`, if there is one.
pub fn find_shared_dir() -> Option<PathBuf> {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let workspace = manifest.ancestors().find(|dir| dir.join("Cargo.lock").is_file()).unwrap_or(manifest);
    let mut candidates: Vec<PathBuf> =
        std::env::var_os("SESSION_INDEX_SHARED").map(PathBuf::from).into_iter().collect();
    candidates.push(workspace.join("../shared"));
    candidates.push(PathBuf::from("/work/shared"));
    candidates.into_iter().find(|dir| dir.join("fixtures/pi-sessions").is_dir())
}

/// The `shared/` folder; a missing one fails the test loudly.
pub fn shared_dir() -> PathBuf {
    find_shared_dir().unwrap_or_else(|| {
        panic!("shared fixtures not found: clone with shared/ beside the workspace or set SESSION_INDEX_SHARED")
    })
}

/// `shared/fixtures/pi-sessions`.
pub fn pi_sessions_dir() -> PathBuf {
    shared_dir().join("fixtures/pi-sessions")
}
