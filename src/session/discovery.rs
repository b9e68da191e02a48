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

/// [`session_files`], each with its metadata read through its directory's
/// listing (`fstatat` by name) instead of by walking its whole path again:
/// the path walks of a store's freshness pass over 30,000 sessions were a
/// quarter of a CLI search's CPU.
pub fn session_files_with_metadata(sessions_dir: &Path) -> Vec<ListedFile> {
    listed(sessions_dir, true)
}

fn listed(sessions_dir: &Path, with_metadata: bool) -> Vec<ListedFile> {
    let (Ok(root), Ok(read)) = (
        std::fs::canonicalize(sessions_dir),
        std::fs::read_dir(sessions_dir),
    ) else {
        return Vec::new();
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
    let mut files = Vec::new();
    for dir in dirs {
        let Ok(listing) = std::fs::read_dir(&dir) else {
            continue;
        };
        let dir_inside = std::fs::canonicalize(&dir).is_ok_and(|d| d.starts_with(&root));
        let first = files.len();
        for e in listing.filter_map(|e| e.ok()).filter(|e| {
            Path::new(&e.file_name())
                .extension()
                .is_some_and(|x| x == "jsonl")
        }) {
            let path = e.path();
            let plain = dir_inside && e.file_type().is_ok_and(|t| t.is_file());
            if plain || regular_files::listed_inside(&root, &path) {
                let metadata = match (with_metadata, plain) {
                    (false, _) => None,
                    (true, true) => e.metadata().ok(),
                    (true, false) => std::fs::symlink_metadata(&path).ok(),
                };
                files.push(ListedFile { path, metadata });
            } else {
                tracing::warn!(
                    "skipping {}: not a regular file inside {}",
                    path.display(),
                    sessions_dir.display()
                );
            }
        }
        // One directory's paths differ only in their names: bytes compare as names do.
        files[first..].sort_unstable_by(|a, b| a.path.as_os_str().cmp(b.path.as_os_str()));
    }
    files
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
