//! Finding session files as pi lays them out (`<sessions dir>/--<cwd>--/*.jsonl`),
//! keeping to regular files inside the sessions directory.

use std::path::{Path, PathBuf};

/// pi's directory name for a cwd (`getDefaultSessionDir`): one leading `/` or
/// `\` dropped, then every `/`, `\` and `:` replaced by `-`, wrapped in `--`.
pub fn encode_cwd(cwd: &str) -> String {
    let trimmed = cwd.strip_prefix(['/', '\\']).unwrap_or(cwd);
    format!("--{}--", trimmed.replace(['/', '\\', ':'], "-"))
}

/// Every session file under `sessions_dir` (`<project dir>/*.jsonl`, pi's
/// layout), sorted: only regular files whose canonical path lies inside the
/// canonical `sessions_dir` (the containment rule every reader follows;
/// others are skipped with a note). A plain file in a directory inside is
/// inside; only symlinks are resolved (resolving every path took 90 ms of a
/// 150 ms index update at 10,000 sessions).
pub fn session_files(sessions_dir: &Path) -> Vec<PathBuf> {
    listed(sessions_dir, false)
        .files
        .into_iter()
        .map(|file| file.path)
        .collect()
}

/// A session file as [`session_files_with_metadata`] lists it.
#[derive(Debug)]
pub struct ListedFile {
    pub path: PathBuf,
    /// What `lstat` says of it (a symlink is not followed), `None` when it
    /// could not be read.
    pub metadata: Option<std::fs::Metadata>,
}

/// What one listing of a sessions directory found.
#[derive(Debug, Default)]
pub struct Listing {
    /// The session files, sorted.
    pub files: Vec<ListedFile>,
    /// The project directories listed (a file added to, removed from or
    /// renamed in one of them changes its modification time), sorted.
    pub dirs: Vec<PathBuf>,
}

/// [`session_files`], each with its metadata read through its directory's
/// listing (`fstatat` by name) instead of by walking its whole path again:
/// the path walks of a store's freshness pass over 30,000 sessions were a
/// quarter of a CLI search's CPU. With the project directories listed.
pub fn session_files_with_metadata(sessions_dir: &Path) -> Listing {
    listed(sessions_dir, true)
}

fn listed(sessions_dir: &Path, with_metadata: bool) -> Listing {
    let (Ok(root), Ok(read)) = (
        std::fs::canonicalize(sessions_dir),
        std::fs::read_dir(sessions_dir),
    ) else {
        return Listing::default();
    };
    let mut dirs: Vec<PathBuf> = read
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    // Component-wise: by project directory, then by file name (each
    // directory's files sorted apart: comparing whole paths component by
    // component took a tenth of a pass at 30,000 sessions).
    dirs.sort();
    let mut found: Vec<Found> = Vec::new();
    for dir in &dirs {
        let Ok(listing) = std::fs::read_dir(dir) else {
            continue;
        };
        let dir_inside = std::fs::canonicalize(dir).is_ok_and(|d| d.starts_with(&root));
        let first = found.len();
        for e in listing.filter_map(|e| e.ok()).filter(|e| {
            Path::new(&e.file_name())
                .extension()
                .is_some_and(|x| x == "jsonl")
        }) {
            let path = e.path();
            let plain = dir_inside && e.file_type().is_ok_and(|t| t.is_file());
            if plain || regular_files::listed_inside(&root, &path) {
                found.push(Found {
                    path,
                    entry: plain.then_some(e),
                });
            } else {
                tracing::warn!(
                    "skipping {}: not a regular file inside {}",
                    path.display(),
                    sessions_dir.display()
                );
            }
        }
        // One directory's paths differ only in their names: bytes compare as names do.
        found[first..].sort_unstable_by(|a, b| a.path.as_os_str().cmp(b.path.as_os_str()));
    }
    let files = if with_metadata {
        with_metadata_read(found)
    } else {
        found
            .into_iter()
            .map(|f| ListedFile {
                path: f.path,
                metadata: None,
            })
            .collect()
    };
    Listing { files, dirs }
}

/// A session file listed, before its metadata is read.
struct Found {
    path: PathBuf,
    /// Its directory entry, when it is a plain file in a directory inside
    /// (its `lstat` by name through the directory), else `None` (by path).
    entry: Option<std::fs::DirEntry>,
}

impl Found {
    /// What `lstat` says of it (`None`: it could not be read).
    fn metadata(&self) -> Option<std::fs::Metadata> {
        match &self.entry {
            Some(entry) => entry.metadata().ok(),
            None => std::fs::symlink_metadata(&self.path).ok(),
        }
    }
}

/// Files from which [`with_metadata_read`] splits the `lstat`s between two
/// threads.
const SPLIT_AT: usize = 2_000;

/// Every file's metadata, read on two threads when there are many: the
/// `lstat` of every session file is most of a freshness pass (~2 µs each on
/// ext4, ~60 ms of one core at 30,000 sessions). The order is kept.
fn with_metadata_read(found: Vec<Found>) -> Vec<ListedFile> {
    let read = |part: &[Found]| part.iter().map(Found::metadata).collect::<Vec<_>>();
    let metadata = if found.len() < SPLIT_AT {
        read(&found)
    } else {
        let (first, second) = found.split_at(found.len() / 2);
        std::thread::scope(|scope| {
            let other = scope.spawn(|| read(second));
            let mut all = read(first);
            // Reading metadata does not panic; if it did, its half is read here.
            all.extend(other.join().unwrap_or_else(|_| read(second)));
            all
        })
    };
    found
        .into_iter()
        .zip(metadata)
        .map(|(found, metadata)| ListedFile {
            path: found.path,
            metadata,
        })
        .collect()
}

/// True when `path` lies in `cwd`'s project directory (`<sessions_dir>/--<cwd>--/`),
/// where pi lists a project's sessions.
pub fn in_project(path: &Path, cwd: &str) -> bool {
    path.parent()
        .and_then(|p| p.file_name())
        .is_some_and(|d| *d == *encode_cwd(cwd))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_cwd_as_pi() {
        assert_eq!(encode_cwd("/home/u/proj"), "--home-u-proj--");
        assert_eq!(encode_cwd("//srv/x"), "---srv-x--");
        assert_eq!(encode_cwd("C:\\Users\\me"), "--C--Users-me--");
        assert_eq!(encode_cwd("\\\\server\\share"), "---server-share--");
    }
}
