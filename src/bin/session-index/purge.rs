//! `session-index purge`: remove what session-index wrote into pi's agent
//! directory, after `pi remove` (which leaves it) or to start afresh.
//!
//! What it removes: `sessions-meta/` (meta files, the spending ledger, locks),
//! `sessions-index/` (the search store) and `session-index/` (models, the
//! one-time notice's mark). What it keeps: pi's session files, including the
//! names session-index gave sessions (pi's own `session_info` entries, as
//! `/name` writes them: removing them would mean rewriting pi's files, which
//! session-index never does), and `session-index.config.json` (the user's).

use std::path::{Path, PathBuf};

use clap::Args as ClapArgs;

use crate::args::{out, AgentDir};
use crate::Failure;

/// What session-index writes under the agent directory, each removed whole.
const WRITTEN: &[&str] = &["sessions-meta", "sessions-index", "session-index"];

#[derive(Debug, ClapArgs)]
#[command(
    after_help = "Examples:\n  session-index purge          list what would be removed and ask\n  \
session-index purge --yes    remove it without asking (scripts)\n\n\
Kept: pi's session files (with the names session-index gave them, pi's own entries) and\n\
session-index.config.json."
)]
pub struct Args {
    #[command(flatten)]
    agent: AgentDir,
    /// Remove without asking (needed when stdin is not a terminal).
    #[arg(long)]
    yes: bool,
}

pub fn run(args: Args) -> Result<(), Failure> {
    let agent_dir = args.agent.path()?;
    let found: Vec<(PathBuf, Size)> = WRITTEN
        .iter()
        .map(|name| agent_dir.join(name))
        .filter(|path| path.symlink_metadata().is_ok())
        .map(|path| {
            let size = Size::of(&path);
            (path, size)
        })
        .collect();
    if found.is_empty() {
        out(&format!(
            "Nothing to remove: {} holds nothing session-index wrote\n",
            agent_dir.display()
        ));
        return Ok(());
    }
    out("session-index wrote:\n");
    for (path, size) in &found {
        out(&format!("  {}  ({size})\n", path.display()));
    }
    out("Kept: pi's session files (and the names given to them), session-index.config.json.\n");
    let without_terminal = "not removing without a terminal to ask on: pass --yes";
    if !args.yes && !crate::args::ask("Remove them?", without_terminal)? {
        out("Nothing removed.\n");
        return Ok(());
    }
    let mut failures = Vec::new();
    for (path, _) in &found {
        // remove_dir_all never follows a symlink: a link is removed, not its target.
        let removed = match path.symlink_metadata() {
            Ok(m) if m.is_dir() => std::fs::remove_dir_all(path),
            _ => std::fs::remove_file(path),
        };
        match removed {
            Ok(()) => out(&format!("removed  {}\n", path.display())),
            Err(e) => failures.push(format!("{}: {e}", path.display())),
        }
    }
    match failures.is_empty() {
        true => Ok(()),
        false => Err(Failure::Failed(format!(
            "could not remove {}",
            failures.join("; ")
        ))),
    }
}

/// Files and bytes under a path (symlinks counted as themselves, never followed).
#[derive(Debug, Default, Clone, Copy)]
struct Size {
    files: u64,
    bytes: u64,
}

impl Size {
    fn of(path: &Path) -> Size {
        let mut size = Size::default();
        size.add(path);
        size
    }

    fn add(&mut self, path: &Path) {
        let Ok(meta) = path.symlink_metadata() else {
            return;
        };
        if !meta.is_dir() {
            self.files += 1;
            self.bytes += meta.len();
            return;
        }
        for entry in std::fs::read_dir(path).into_iter().flatten().flatten() {
            self.add(&entry.path());
        }
    }
}

impl std::fmt::Display for Size {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let files = match self.files {
            1 => "1 file".to_string(),
            n => format!("{n} files"),
        };
        match self.bytes {
            b if b < 1024 * 1024 => write!(f, "{files}, {:.1} KB", b as f64 / 1024.0),
            b => write!(f, "{files}, {:.1} MB", b as f64 / (1024.0 * 1024.0)),
        }
    }
}
