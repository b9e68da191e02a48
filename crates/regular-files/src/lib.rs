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

/// A directory held open, in which files are created and opened by name
/// only, never through a symlink (`openat` with `O_NOFOLLOW`): what lock
/// files need. A lock file is opened for writing and created if missing, so
/// a planted symlink in its place (`.locks/<id>.lock` → `~/.bashrc`) would
/// create or truncate a file anywhere; here it is refused.
#[derive(Debug)]
pub struct Dir {
    path: PathBuf,
    #[cfg(unix)]
    fd: std::os::fd::OwnedFd,
}

impl Dir {
    /// The directory `path` (a symlink to a directory is followed: the
    /// directories a user gives, such as the agent directory, are theirs).
    pub fn open(path: &Path) -> std::io::Result<Dir> {
        #[cfg(unix)]
        {
            let fd = open_dir_fd(None, path, false)?;
            Ok(Dir {
                path: path.to_path_buf(),
                fd,
            })
        }
        #[cfg(not(unix))]
        {
            if !std::fs::metadata(path)?.is_dir() {
                return Err(Error::new(ErrorKind::InvalidInput, "is not a directory"));
            }
            Ok(Dir {
                path: path.to_path_buf(),
            })
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Its subdirectory `name`, created if missing; an error if `name` is
    /// a symlink or anything but a directory.
    pub fn subdir(&self, name: &str) -> std::io::Result<Dir> {
        let path = self.path.join(plain_name(name)?);
        #[cfg(unix)]
        {
            let c = c_name(name)?;
            // SAFETY: a valid directory fd and a NUL-terminated name.
            if unsafe {
                libc::mkdirat(std::os::fd::AsRawFd::as_raw_fd(&self.fd), c.as_ptr(), 0o700)
            } != 0
            {
                let e = Error::last_os_error();
                if e.kind() != ErrorKind::AlreadyExists {
                    return Err(e);
                }
            }
            let fd = open_dir_fd(Some(&self.fd), Path::new(name), true).map_err(|e| {
                // O_DIRECTORY with O_NOFOLLOW says ENOTDIR for a symlink: name it.
                match std::fs::symlink_metadata(&path) {
                    Ok(m) if m.file_type().is_symlink() => {
                        Error::new(ErrorKind::InvalidInput, "is a symlink, not a directory")
                    }
                    _ => e,
                }
            })?;
            Ok(Dir { path, fd })
        }
        #[cfg(not(unix))]
        {
            match std::fs::create_dir(&path) {
                Err(e) if e.kind() != ErrorKind::AlreadyExists => return Err(e),
                _ => {}
            }
            if !std::fs::symlink_metadata(&path)?.is_dir() {
                return Err(Error::new(ErrorKind::InvalidInput, "is not a directory"));
            }
            Ok(Dir { path })
        }
    }

    /// The lock file `name` in this directory, opened for reading and
    /// writing and created if missing (never truncated); an error if `name`
    /// is a symlink, a FIFO or anything but a regular file.
    pub fn lock_file(&self, name: &str) -> std::io::Result<File> {
        #[cfg(unix)]
        let file = {
            use std::os::fd::{AsRawFd, FromRawFd};
            let c = c_name(name)?;
            let flags = libc::O_RDWR
                | libc::O_CREAT
                | libc::O_NOFOLLOW
                | libc::O_NONBLOCK
                | libc::O_CLOEXEC;
            // SAFETY: a valid directory fd and a NUL-terminated name.
            let fd = unsafe {
                libc::openat(
                    self.fd.as_raw_fd(),
                    c.as_ptr(),
                    flags,
                    0o600 as libc::c_uint,
                )
            };
            if fd < 0 {
                let e = Error::last_os_error();
                return Err(if e.raw_os_error() == Some(libc::ELOOP) {
                    Error::new(ErrorKind::InvalidInput, "is a symlink, not a lock file")
                } else {
                    e
                });
            }
            // SAFETY: `fd` was just opened and is owned by nothing else.
            unsafe { File::from_raw_fd(fd) }
        };
        #[cfg(not(unix))]
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(self.path.join(plain_name(name)?))?;
        if !file.metadata()?.is_file() {
            return Err(Error::new(ErrorKind::InvalidInput, "is not a regular file"));
        }
        Ok(file)
    }
}

/// `name` if it is one path component (no separator, not `.` or `..`).
fn plain_name(name: &str) -> std::io::Result<&str> {
    let plain =
        !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\\', '\0']);
    if plain {
        Ok(name)
    } else {
        Err(Error::new(
            ErrorKind::InvalidInput,
            format!("{name:?} is not a file name"),
        ))
    }
}

#[cfg(unix)]
fn c_name(name: &str) -> std::io::Result<std::ffi::CString> {
    std::ffi::CString::new(plain_name(name)?).map_err(|e| Error::new(ErrorKind::InvalidInput, e))
}

/// Open a directory (relative to `at` when given) as an fd; with
/// `no_follow`, a symlink in its place is refused.
#[cfg(unix)]
fn open_dir_fd(
    at: Option<&std::os::fd::OwnedFd>,
    path: &Path,
    no_follow: bool,
) -> std::io::Result<std::os::fd::OwnedFd> {
    use std::os::fd::{AsRawFd, FromRawFd};
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes())
        .map_err(|e| Error::new(ErrorKind::InvalidInput, e))?;
    let flags = libc::O_RDONLY
        | libc::O_DIRECTORY
        | libc::O_CLOEXEC
        | if no_follow { libc::O_NOFOLLOW } else { 0 };
    let dirfd = at.map_or(libc::AT_FDCWD, |fd| fd.as_raw_fd());
    // SAFETY: a valid (or AT_FDCWD) directory fd and a NUL-terminated path.
    let fd = unsafe { libc::openat(dirfd, c.as_ptr(), flags) };
    if fd < 0 {
        let e = Error::last_os_error();
        return Err(match e.raw_os_error() {
            Some(libc::ELOOP) => {
                Error::new(ErrorKind::InvalidInput, "is a symlink, not a directory")
            }
            Some(libc::ENOTDIR) => Error::new(ErrorKind::InvalidInput, "is not a directory"),
            _ => e,
        });
    }
    // SAFETY: `fd` was just opened and is owned by nothing else.
    Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lock files are created inside a checked directory and never through
    /// a symlink: a planted link (to a file, or a directory in place of the
    /// locks directory) is refused and nothing is created where it points.
    #[cfg(unix)]
    #[test]
    fn lock_files_never_follow_a_symlink() {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let dir = Dir::open(root.path()).unwrap();
        let locks = dir.subdir(".locks").unwrap();
        let file = locks.lock_file("a.lock").unwrap();
        assert!(file.metadata().unwrap().is_file());
        assert!(
            dir.subdir(".locks").is_ok(),
            "an existing directory is opened"
        );

        let target = outside.path().join("victim");
        std::os::unix::fs::symlink(&target, root.path().join(".locks/b.lock")).unwrap();
        let err = locks.lock_file("b.lock").unwrap_err();
        assert_eq!(err.to_string(), "is a symlink, not a lock file");
        assert!(!target.exists(), "nothing was created through the link");

        std::os::unix::fs::symlink(outside.path(), root.path().join("linked")).unwrap();
        let err = dir.subdir("linked").unwrap_err();
        assert_eq!(err.to_string(), "is a symlink, not a directory");
        assert!(locks.lock_file("../x").is_err() && dir.subdir("..").is_err());

        let fifo = std::ffi::CString::new(
            root.path()
                .join(".locks/f.lock")
                .as_os_str()
                .as_encoded_bytes(),
        )
        .unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        assert_eq!(
            locks.lock_file("f.lock").unwrap_err().to_string(),
            "is not a regular file"
        );
    }

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
