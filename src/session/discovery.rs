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
    let (Ok(root), Ok(read)) = (
        std::fs::canonicalize(sessions_dir),
        std::fs::read_dir(sessions_dir),
    ) else {
        return Vec::new();
    };
    let mut files = Vec::new();
    for dir in read
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.is_dir())
    {
        let Ok(listing) = std::fs::read_dir(&dir) else {
            continue;
        };
        let dir_inside = std::fs::canonicalize(&dir).is_ok_and(|d| d.starts_with(&root));
        for e in listing
            .filter_map(|e| e.ok())
            .filter(|e| e.path().extension().is_some_and(|x| x == "jsonl"))
        {
            let plain = dir_inside && e.file_type().is_ok_and(|t| t.is_file());
            if plain || regular_files::listed_inside(&root, &e.path()) {
                files.push(e.path());
            } else {
                tracing::warn!(
                    "skipping {}: not a regular file inside {}",
                    e.path().display(),
                    sessions_dir.display()
                );
            }
        }
    }
    // Component-wise: by project directory, then by file name.
    files.sort();
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
