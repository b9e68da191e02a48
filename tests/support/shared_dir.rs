//! Where the shared pi-session fixtures live, for every test crate of the
//! workspace (included with `#[path]`): `$SESSION_INDEX_SHARED`, else
//! `shared/` beside the workspace (the CI layout), else `/work/shared`.
//! The fixtures are read in place and never copied into the repository.

#![allow(dead_code)] // each test binary uses a different subset

use std::path::{Path, PathBuf};

/// The `shared/` folder holding `fixtures/pi-sessions`, if there is one.
pub fn find_shared_dir() -> Option<PathBuf> {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let workspace = manifest
        .ancestors()
        .find(|dir| dir.join("Cargo.lock").is_file())
        .unwrap_or(manifest);
    let mut candidates: Vec<PathBuf> = std::env::var_os("SESSION_INDEX_SHARED")
        .map(PathBuf::from)
        .into_iter()
        .collect();
    candidates.push(workspace.join("../shared"));
    candidates.push(PathBuf::from("/work/shared"));
    candidates
        .into_iter()
        .find(|dir| dir.join("fixtures/pi-sessions").is_dir())
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

/// The first real pi session of the shared fixtures, by file name (the
/// dated ones pi writes), for tests that need one real session.
pub fn first_real_session() -> PathBuf {
    let mut files: Vec<PathBuf> = std::fs::read_dir(pi_sessions_dir().join("real"))
        .expect("real fixtures dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension().is_some_and(|x| x == "jsonl")
                && p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("20"))
        })
        .collect();
    files.sort();
    files
        .into_iter()
        .next()
        .expect("at least one real session fixture")
}
