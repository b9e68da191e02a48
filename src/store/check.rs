//! Whether a store file may serve before it is read: the quick check, and
//! the stamp that lets a command skip it.
//!
//! The guarantee (issue 24): a store damaged while no session-index process
//! had it open (flipped bytes, a file cut short, pages of garbage, an old
//! copy put back) is quick-checked, found and set aside before it serves
//! anything, since the pages a command reads may not be the damaged ones
//! (4 of 10 damaged files went on serving silently).
//!
//! Checking every time costs a command a read of the whole file: 0.2-0.3 s
//! at 3,000 sessions, 1.2-2.3 s at 30,000 (1.5 GB). So the file as it was
//! when it was last known sound is kept beside it (`index.sqlite.checked`:
//! length, inode, mtime and ctime; a flipped byte moves the ctime, which no
//! one can set back), and a command that finds the file so skips the check.
//! The file is known sound
//! - when its quick check passes, and
//! - when a process that opened it sound closes it without having met any
//!   damage: every change since it opened was written by SQLite, under its
//!   locks and journal, by this process or another one that had it open too
//!   (the last one to close copies the WAL in), so it records the file as
//!   its close leaves it ([`Vouch`]). Without that, every write (pi's
//!   plugin after each agent run, a CLI search that picked up an append)
//!   made the next command check the whole file again.
//!
//! What it does not cover: damage done while a session-index process has
//! the store open, by something other than SQLite. The statements that
//! read a damaged page find it (and set the file aside, see `Store::sql`);
//! a process killed before it closes the store records nothing, so the next
//! one checks.

use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::SystemTime;

use rusqlite::Connection;

use super::{is_corrupt, schema};

/// One file, not one path: its inode and birth time (an inode number is
/// soon reused; a damaged file set aside is replaced by a new one).
#[derive(Debug, Clone, PartialEq, Eq)]
struct FileId {
    inode: u64,
    born: Option<SystemTime>,
}

impl FileId {
    fn of(md: &std::fs::Metadata) -> FileId {
        #[cfg(unix)]
        let inode = std::os::unix::fs::MetadataExt::ino(md);
        #[cfg(not(unix))]
        let inode = 0;
        FileId {
            inode,
            born: md.created().ok(),
        }
    }
}

/// The store file as it was when it was last known sound, kept beside it
/// (`index.sqlite.checked`).
#[derive(Debug, PartialEq, Eq)]
struct CheckedStamp(String);

impl CheckedStamp {
    fn of(md: &std::fs::Metadata) -> CheckedStamp {
        #[cfg(unix)]
        let changed = {
            use std::os::unix::fs::MetadataExt;
            format!(
                "{} {}.{} {}.{}",
                md.ino(),
                md.mtime(),
                md.mtime_nsec(),
                md.ctime(),
                md.ctime_nsec()
            )
        };
        #[cfg(not(unix))]
        let changed = format!("{:?}", md.modified().ok());
        CheckedStamp(format!("v1 {} {changed}\n", md.len()))
    }

    fn path(store: &Path) -> PathBuf {
        let mut name = store.as_os_str().to_owned();
        name.push(".checked");
        PathBuf::from(name)
    }

    /// The stamp kept beside `store` is this one (read without blocking:
    /// anything but a regular file there is no stamp).
    fn matches_file(&self, store: &Path) -> bool {
        regular_files::read_regular(&Self::path(store)).is_ok_and(|kept| kept == self.0.as_bytes())
    }

    /// Keep it beside `store`; a failure only means the next command checks again.
    fn write(&self, store: &Path) {
        let target = Self::path(store);
        let temp = target.with_extension(format!("checked.{}.tmp", std::process::id()));
        if let Err(e) = super::meta::file::replace(&temp, &target, self.0.as_bytes()) {
            tracing::debug!("{}: {e}", target.display());
        }
    }
}

/// Whether the next process to open the store at `store` will skip its
/// quick check: the stamp beside it describes the file as it is.
pub(super) fn stamp_matches(store: &Path) -> bool {
    std::fs::metadata(store).is_ok_and(|md| CheckedStamp::of(&md).matches_file(store))
}

/// What opening found of the store file.
pub(super) enum Verdict {
    /// Known sound: checked in this process before, as stamped, or its quick check passed.
    Sound,
    /// What is wrong with it.
    Damaged(String),
    /// Not checked (the file could not be stat'ed, or the check could not
    /// run, e.g. busy): it serves, but is not vouched for.
    Unchecked,
}

/// Once per process and store file, unless the stamp beside it says it is
/// as it was when last known sound, the quick check of `conn`'s store at `path`.
pub(super) fn check_once(conn: &Connection, path: &Path) -> Verdict {
    static CHECKED: Mutex<Vec<(PathBuf, FileId)>> = Mutex::new(Vec::new());
    let Ok(md) = std::fs::metadata(path) else {
        return Verdict::Unchecked;
    };
    let file = (path.to_path_buf(), FileId::of(&md));
    {
        let mut checked = CHECKED.lock().unwrap_or_else(PoisonError::into_inner);
        if checked.contains(&file) {
            return Verdict::Sound;
        }
        checked.push(file.clone());
    }
    let stamp = CheckedStamp::of(&md);
    if stamp.matches_file(path) {
        return Verdict::Sound;
    }
    match first_problem(conn) {
        Ok(None) => {
            stamp.write(path);
            Verdict::Sound
        }
        Ok(Some(verdict)) => Verdict::Damaged(format!(
            "its quick check failed ({})",
            crate::text::one_line(&verdict, 160)
        )),
        Err(e) if is_corrupt(&e) => Verdict::Damaged(format!("it is damaged ({e})")),
        Err(e) => {
            tracing::debug!("search index {}: no quick check: {e}", path.display());
            // The next store this process opens tries again.
            let mut checked = CHECKED.lock().unwrap_or_else(PoisonError::into_inner);
            checked.retain(|known| *known != file);
            Verdict::Unchecked
        }
    }
}

/// [`schema::QUICK_CHECKS`], a table at a time: the first that is not `ok`.
fn first_problem(conn: &Connection) -> rusqlite::Result<Option<String>> {
    for check in schema::QUICK_CHECKS {
        let verdict: String = conn.query_row(check, [], |r| r.get(0))?;
        if verdict != "ok" {
            return Ok(Some(verdict));
        }
    }
    Ok(None)
}

/// A store's promise to stamp its file when it closes: held by a store
/// opened sound, broken by any damage it meets. It must drop after the
/// store's connection (declared after it), so the stamp records the file
/// as the close left it (the last connection to close copies the WAL in).
#[derive(Debug)]
pub(super) struct Vouch {
    path: PathBuf,
    /// The file known sound, while nothing says otherwise.
    file: Option<FileId>,
    damaged: Cell<bool>,
}

impl Vouch {
    /// For the store at `path`, vouching for nothing yet.
    pub(super) fn new(path: &Path) -> Vouch {
        Vouch {
            path: path.to_path_buf(),
            file: None,
            damaged: Cell::new(false),
        }
    }

    /// The file at the path now is known sound (checked, or made by this process).
    pub(super) fn trust_file(&mut self) {
        self.file = std::fs::metadata(&self.path).ok().map(|md| FileId::of(&md));
    }

    /// The store met damage: it vouches for nothing.
    pub(super) fn damaged(&self) {
        self.damaged.set(true);
    }
}

impl Drop for Vouch {
    fn drop(&mut self) {
        let Some(file) = self.file.take().filter(|_| !self.damaged.get()) else {
            return;
        };
        let Ok(md) = std::fs::metadata(&self.path) else {
            return;
        };
        // Another file there now (set aside and rebuilt by another process): not ours to vouch for.
        if FileId::of(&md) != file {
            return;
        }
        let stamp = CheckedStamp::of(&md);
        if !stamp.matches_file(&self.path) {
            stamp.write(&self.path);
        }
    }
}
