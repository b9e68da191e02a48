//! The one way to open a file found in a user's directory (session files,
//! meta files, config files).
//!
//! A name says nothing about what a file is: `x.jsonl` may be a FIFO, a
//! device or a symlink to anywhere. A plain `open` of a FIFO blocks until a
//! writer appears, which hangs whoever asked. So every reader opens with
//! `O_NONBLOCK` (which regular files ignore), then checks the open handle
//! with `fstat` and refuses anything but a regular file. Containment
//! ([`inside`]) compares canonical paths, so a symlink may point anywhere
//! within the root but never out of it.
//!
//! Errors carry no path (as `std::fs` errors): callers name the file.

use std::fs::{File, OpenOptions};
use std::io::{Error, ErrorKind, Read};
use std::path::{Path, PathBuf};

/// Open `path` for reading without blocking; an error unless it is a regular file.
pub fn open_regular(path: &Path) -> std::io::Result<File> {
    open_with(path, false)
}

fn open_with(path: &Path, no_follow: bool) -> std::io::Result<File> {
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK | if no_follow { libc::O_NOFOLLOW } else { 0 });
    }
    #[cfg(not(unix))]
    let _ = no_follow;
    let file = options.open(path)?;
    let kind = file.metadata()?.file_type();
    #[cfg(unix)]
    let fifo = std::os::unix::fs::FileTypeExt::is_fifo(&kind);
    #[cfg(not(unix))]
    let fifo = false;
    let what = match (kind.is_file(), kind.is_dir(), fifo) {
        (true, ..) => return Ok(file),
        (_, true, _) => "a directory",
        (.., true) => "a FIFO",
        _ => "a special file",
    };
    Err(Error::new(
        ErrorKind::InvalidInput,
        format!("is {what}, not a regular file"),
    ))
}

/// Read a whole regular file (see [`open_regular`]).
pub fn read_regular(path: &Path) -> std::io::Result<Vec<u8>> {
    let mut file = open_regular(path)?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// The canonical path of `path` if it lies strictly inside the directory
/// `root` once every symlink is resolved; otherwise an error naming the root
/// (never where the path leads: that may be private).
pub fn inside(root: &Path, path: &Path) -> std::io::Result<PathBuf> {
    let root = std::fs::canonicalize(root)?;
    let real = std::fs::canonicalize(path)?;
    if real.starts_with(&root) && real != root {
        return Ok(real);
    }
    Err(Error::new(
        ErrorKind::PermissionDenied,
        format!("leads outside {}", root.display()),
    ))
}

/// Open `path` only if it is a regular file inside `root` (see [`inside`]).
pub fn open_inside(root: &Path, path: &Path) -> std::io::Result<File> {
    open_with(&inside(root, path)?, true)
}

/// Read a whole regular file inside `root` (see [`open_inside`]).
pub fn read_inside(root: &Path, path: &Path) -> std::io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    open_inside(root, path)?.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Whether `path` is a regular file inside the canonical directory
/// `canon_root` (no file is opened): the test for directory listings.
pub fn listed_inside(canon_root: &Path, path: &Path) -> bool {
    std::fs::canonicalize(path).is_ok_and(|real| real.starts_with(canon_root) && real.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    fn fifo(path: &Path) {
        let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.jsonl");
        fifo(&path);
        let err = open_regular(&path).unwrap_err();
        assert_eq!(err.to_string(), "is a FIFO, not a regular file");
        assert!(read_regular(&path).is_err());
        assert!(!listed_inside(
            &std::fs::canonicalize(dir.path()).unwrap(),
            &path
        ));
    }

    #[test]
    fn directories_are_refused_and_files_read() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            open_regular(dir.path()).unwrap_err().to_string(),
            "is a directory, not a regular file"
        );
        let file = dir.path().join("a");
        std::fs::write(&file, "x").unwrap();
        assert_eq!(read_regular(&file).unwrap(), b"x");
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_may_not_leave_the_root() {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let secret = outside.path().join("secret.jsonl");
        std::fs::write(&secret, "s").unwrap();
        let within = root.path().join("real.jsonl");
        std::fs::write(&within, "r").unwrap();
        std::os::unix::fs::symlink(&secret, root.path().join("out.jsonl")).unwrap();
        std::os::unix::fs::symlink(&within, root.path().join("in.jsonl")).unwrap();
        let err = open_inside(root.path(), &root.path().join("out.jsonl")).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::PermissionDenied);
        assert!(err.to_string().contains("outside"), "{err}");
        assert!(open_inside(root.path(), &root.path().join("in.jsonl")).is_ok());
        assert!(
            inside(root.path(), root.path()).is_err(),
            "the root itself is not inside"
        );
        let canon = std::fs::canonicalize(root.path()).unwrap();
        assert!(listed_inside(&canon, &root.path().join("in.jsonl")));
        assert!(!listed_inside(&canon, &root.path().join("out.jsonl")));
    }
}
