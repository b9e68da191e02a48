//! Atomic, locked writes of meta files.
//!
//! A write goes to a temp file in the meta directory, is fsynced, renamed over
//! `<id>.meta.json` and the directory is fsynced, so a reader (or a crash)
//! only ever sees the old or the new complete document. Writers in different
//! processes serialize on `.locks/<id>.lock` with an fs4 exclusive lock: the
//! file renamed over cannot carry the lock (rename swaps the inode), so the
//! lock lives on a separate file that is never replaced. Lock files stay in
//! the hidden `.locks` directory, out of the users' listing of meta files.
//! A file of a newer schemaVersion is never replaced.
//!
//! What a model wrote was paid for: a document of the offline model never
//! replaces it ([`Replace::KeepModelWritten`], the default). The rule is
//! checked here, under the lock, on the document on disk at that moment, so
//! no caller can race it: two processes that both read "no meta" before
//! either wrote (an offline `index --all` next to a model one, `agent_end`
//! next to `/index-all` in another pi) end with the model's document
//! whichever renames last.
//!
//! A writer killed between creating its temp file and renaming it leaves the
//! temp file behind: the next writer removes those of its own session (it
//! holds that session's lock, so none can be live) and any other older than
//! [`STALE_TEMP_AGE`] (no write takes that long).

use std::collections::BTreeSet;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use super::{meta_path, read_path, MetaError, SessionMeta, SCHEMA_VERSION};

/// Suffix of temp files: never `.meta.json`, so listings of meta files skip them.
pub const TEMP_SUFFIX: &str = ".tmp";
/// Directory in the meta directory holding the lock files.
pub const LOCK_DIR: &str = ".locks";
/// Age past which a temp file in the meta directory is a dead writer's.
pub const STALE_TEMP_AGE: std::time::Duration = std::time::Duration::from_secs(60);

/// Whether a write may replace the document on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replace {
    /// Any document, except that the offline model's never replaces one a
    /// model wrote ([`MetaError::ModelWritten`]).
    KeepModelWritten,
    /// Any document (`session-index index --force`: the user asked for it).
    Any,
}

/// Read a meta file to write it again: a corrupt one counts as missing (the
/// write replaces it), one of a newer schema is `Err(Newer)` (never written).
/// Either is warned about once per file per process.
pub fn read_or_missing(
    meta_dir: &Path,
    session_id: &str,
) -> Result<Option<SessionMeta>, MetaError> {
    let path = meta_path(meta_dir, session_id)?;
    let result = match read_path(&path) {
        Ok(Some(m)) if m.schema_version > SCHEMA_VERSION => Err(MetaError::Newer {
            path: path.clone(),
            version: m.schema_version.into(),
        }),
        Err(MetaError::Invalid { reason, .. }) => {
            warn_once(
                &path,
                &format!(
                    "ignoring corrupt meta file {} ({reason}); it will be replaced",
                    path.display()
                ),
            );
            Ok(None)
        }
        other => other,
    };
    if let Err(e @ MetaError::Newer { .. }) = &result {
        warn_once(&path, &e.to_string());
    }
    result
}

/// Warn about `path`; true the first time it is reported in this process.
fn warn_once(path: &Path, message: &str) -> bool {
    static WARNED: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());
    let first = WARNED
        .lock()
        .map(|mut set| set.insert(path.to_path_buf()))
        .unwrap_or(false);
    if first {
        tracing::warn!("{message}");
    }
    first
}

/// Holds `.locks/<id>.lock` exclusively until dropped.
pub struct MetaLock {
    file: File,
}

impl MetaLock {
    /// Block until this process holds the session's meta lock. The lock
    /// file is opened inside `.locks`, itself opened as a directory, neither
    /// through a symlink ([`regular_files::Dir`]): a link planted in their
    /// place would have a lock file created (or opened for writing) anywhere.
    pub fn acquire(meta_dir: &Path, session_id: &str) -> Result<MetaLock, MetaError> {
        meta_path(meta_dir, session_id)?;
        create_dir(meta_dir)?;
        let dir = meta_dir.join(LOCK_DIR);
        let path = dir.join(format!("{session_id}.lock"));
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| MetaError::Io { path, source }
        };
        let locks = regular_files::Dir::open(meta_dir)
            .and_then(|m| m.subdir(LOCK_DIR))
            .map_err(io(&dir))?;
        let file = locks
            .lock_file(&format!("{session_id}.lock"))
            .map_err(io(&path))?;
        // Fully qualified: std's inherent `File::lock` would shadow the trait method on newer toolchains.
        fs4::FileExt::lock(&file).map_err(|source| MetaError::Io { path, source })?;
        Ok(MetaLock { file })
    }
}

impl Drop for MetaLock {
    fn drop(&mut self) {
        let _ = fs4::FileExt::unlock(&self.file);
    }
}

fn create_dir(dir: &Path) -> Result<(), MetaError> {
    std::fs::create_dir_all(dir).map_err(|source| MetaError::Io {
        path: dir.to_path_buf(),
        source,
    })
}

/// Read-modify-write under the session's lock: `build` gets the current meta
/// (corrupt → `None`) and returns the document to write atomically. A
/// current file of a newer schema is left untouched: `Err(Newer)`, warned
/// once; so is a model's document the offline model's would replace, unless
/// `replace` is [`Replace::Any`]: `Err(ModelWritten)`.
pub fn update<F>(
    meta_dir: &Path,
    session_id: &str,
    replace: Replace,
    build: F,
) -> Result<(PathBuf, SessionMeta), MetaError>
where
    F: FnOnce(Option<SessionMeta>) -> SessionMeta,
{
    let _lock = MetaLock::acquire(meta_dir, session_id)?;
    let current = read_or_missing(meta_dir, session_id)?;
    let kept = current
        .as_ref()
        .filter(|current| replace == Replace::KeepModelWritten && current.written_by_model());
    let kept_model = kept.map(|current| current.model.clone());
    let meta = build(current);
    if let Some(model) = kept_model.filter(|_| meta.written_offline()) {
        return Err(MetaError::ModelWritten {
            path: meta_path(meta_dir, session_id)?,
            model,
        });
    }
    let path = write_unlocked(meta_dir, &meta)?;
    Ok((path, meta))
}

/// Write `meta` atomically under its lock (never over a newer schema's file,
/// nor, offline, over a model's).
pub fn write(meta_dir: &Path, meta: &SessionMeta) -> Result<PathBuf, MetaError> {
    update(
        meta_dir,
        &meta.session_id,
        Replace::KeepModelWritten,
        |_| meta.clone(),
    )
    .map(|(path, _)| path)
}

/// The atomic write itself; the caller holds the lock.
fn write_unlocked(meta_dir: &Path, meta: &SessionMeta) -> Result<PathBuf, MetaError> {
    meta.check().map_err(|reason| MetaError::Invalid {
        path: meta_dir.to_path_buf(),
        reason,
    })?;
    let target = meta_path(meta_dir, &meta.session_id)?;
    create_dir(meta_dir)?;
    let mut json = serde_json::to_vec_pretty(meta).map_err(|e| MetaError::Invalid {
        path: target.clone(),
        reason: e.to_string(),
    })?;
    json.push(b'\n');
    remove_stale_temps(meta_dir, Some(&meta.session_id));
    let temp = temp_path(meta_dir, &meta.session_id);
    replace(&temp, &target, &json).map_err(|source| MetaError::Io {
        path: target.clone(),
        source,
    })?;
    Ok(target)
}

/// Write `bytes` to the new file `temp` beside `target`, fsync it, rename it
/// over `target` and fsync the directory: a reader (or a crash) sees the old
/// or the new document, never a torn one. The temp file goes if a step fails.
pub fn replace(temp: &Path, target: &Path, bytes: &[u8]) -> std::io::Result<()> {
    replace_with(temp, target, bytes, Durability::Synced)
}

/// Whether [`replace_with`] syncs the file and its directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// Users' data (a meta file, the ledger): a crash leaves the old or the new document.
    Synced,
    /// A note that only saves work (the store's quick stamp): a crash may
    /// lose it, or leave it torn, which its reader takes for none.
    Unsynced,
}

/// [`replace`], syncing only when `durability` says so (a reader never sees
/// a torn file either way: the rename is atomic).
pub fn replace_with(
    temp: &Path,
    target: &Path,
    bytes: &[u8],
    durability: Durability,
) -> std::io::Result<()> {
    let synced = durability == Durability::Synced;
    let result = (|| {
        let mut file = OpenOptions::new().write(true).create_new(true).open(temp)?;
        file.write_all(bytes)?;
        if synced {
            file.sync_all()?;
        }
        drop(file);
        std::fs::rename(temp, target)?;
        if synced {
            sync_dir(target.parent().unwrap_or(Path::new(".")))?;
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(temp);
    }
    result
}

/// `.<id>.meta.json.<pid>.<n>.tmp`: hidden, unique per writer, never a meta file name.
fn temp_path(meta_dir: &Path, session_id: &str) -> PathBuf {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    meta_dir.join(format!(
        ".{session_id}.meta.json.{}.{n}{TEMP_SUFFIX}",
        std::process::id()
    ))
}

/// Temp files left in `meta_dir` by writers that died mid-write (a meta
/// file's `.<id>.meta.json.<pid>.<n>.tmp`, the ledger's
/// `.spending.json.<pid>.tmp`): those of `own_session`, whose lock the caller
/// holds (writers create them only under it), and any other older than
/// [`STALE_TEMP_AGE`].
pub fn remove_stale_temps(meta_dir: &Path, own_session: Option<&str>) {
    let own = own_session.map(|id| format!(".{id}.meta.json."));
    let Ok(entries) = std::fs::read_dir(meta_dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let ours = name.contains(".meta.json.") || name.starts_with(".spending.json.");
        if !(ours && name.starts_with('.') && name.ends_with(TEMP_SUFFIX)) {
            continue;
        }
        let is_own = own
            .as_ref()
            .is_some_and(|own| name.starts_with(own.as_str()));
        if is_own || is_stale(&entry) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// A regular file last written more than [`STALE_TEMP_AGE`] ago.
fn is_stale(entry: &std::fs::DirEntry) -> bool {
    let Ok(metadata) = entry.metadata() else {
        return false;
    };
    let age = metadata
        .modified()
        .ok()
        .and_then(|modified| modified.elapsed().ok());
    metadata.is_file() && age.is_some_and(|age| age > STALE_TEMP_AGE)
}

#[cfg(unix)]
fn sync_dir(dir: &Path) -> std::io::Result<()> {
    File::open(dir)?.sync_all()
}

#[cfg(not(unix))]
fn sync_dir(_dir: &Path) -> std::io::Result<()> {
    // Directories cannot be opened for fsync on Windows; rename there is already durable enough.
    Ok(())
}

/// True for a file name the store writes as a meta document (not a temp or lock file).
pub fn is_meta_file_name(name: &str) -> bool {
    name.ends_with(".meta.json") && !name.starts_with('.')
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::meta::SCHEMA_VERSION;

    pub(crate) fn sample(id: &str, name: &str) -> SessionMeta {
        SessionMeta {
            schema_version: SCHEMA_VERSION,
            session_id: id.into(),
            session_file: format!("/s/{id}.jsonl"),
            parent_session_file: None,
            name: name.into(),
            description: "d".into(),
            summary: "s".into(),
            tags: vec!["a".into()],
            cwd: "/w".into(),
            created_at: "2026-01-01T00:00:00.000Z".into(),
            updated_at: "2026-01-01T00:00:00.000Z".into(),
            model: "local/extractive".into(),
            model_choice: None,
            last_indexed_leaf_id: None,
            usage: None,
            files: None,
            decisions: vec![],
            open_tasks: vec![],
            extra: Default::default(),
        }
    }

    #[test]
    fn write_then_read_round_trips_and_leaves_no_temp_files() {
        let dir = tempfile::tempdir().unwrap();
        let meta = sample("abc", "First");
        let path = write(dir.path(), &meta).unwrap();
        assert_eq!(path, dir.path().join("abc.meta.json"));
        assert_eq!(
            crate::store::meta::read(dir.path(), "abc").unwrap(),
            Some(meta)
        );
        let mut names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(
            names,
            [LOCK_DIR, "abc.meta.json"],
            "lock files stay out of the listing"
        );
        assert!(dir.path().join(LOCK_DIR).join("abc.lock").is_file());
    }

    #[test]
    fn a_newer_schema_is_read_where_readable_and_never_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("n.meta.json");
        // Readable: the fields of schema 1 are still there.
        let mut newer = serde_json::to_value(sample("n", "Kept")).unwrap();
        newer["schemaVersion"] = 2.into();
        newer["futureField"] = "x".into();
        let text = serde_json::to_string(&newer).unwrap();
        std::fs::write(&path, &text).unwrap();
        assert_eq!(
            crate::store::meta::read(dir.path(), "n")
                .unwrap()
                .unwrap()
                .name,
            "Kept"
        );
        let refused = update(dir.path(), "n", Replace::Any, |_| {
            sample("n", "Overwritten")
        })
        .unwrap_err();
        assert!(
            matches!(refused, MetaError::Newer { version: 2, .. }),
            "{refused}"
        );
        assert!(write(dir.path(), &sample("n", "Overwritten")).is_err());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
        // Unreadable: a newer schema whose fields changed shape.
        let text = r#"{"schemaVersion":7,"sessionId":"n","name":{"parts":["a"]}}"#;
        std::fs::write(&path, text).unwrap();
        let err = crate::store::meta::read(dir.path(), "n").unwrap_err();
        assert!(
            err.to_string().contains("schemaVersion 7 is newer"),
            "{err}"
        );
        assert!(matches!(
            read_or_missing(dir.path(), "n"),
            Err(MetaError::Newer { version: 7, .. })
        ));
        assert!(update(dir.path(), "n", Replace::Any, |_| sample(
            "n",
            "Overwritten"
        ))
        .is_err());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
    }

    #[test]
    fn corrupt_meta_is_missing_warned_once_and_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.meta.json");
        std::fs::write(&path, "{\"schemaVersion\":1,\"sessionId\":").unwrap();
        assert!(matches!(
            crate::store::meta::read(dir.path(), "bad"),
            Err(MetaError::Invalid { .. })
        ));
        assert_eq!(read_or_missing(dir.path(), "bad").unwrap(), None);
        assert!(
            !warn_once(&path, "again"),
            "a second report of the same file is not warned"
        );
        let (_, written) = update(dir.path(), "bad", Replace::Any, |prev| {
            assert!(prev.is_none());
            sample("bad", "Fixed")
        })
        .unwrap();
        assert_eq!(
            crate::store::meta::read(dir.path(), "bad").unwrap(),
            Some(written)
        );
    }

    #[test]
    fn update_sees_the_previous_document() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), &sample("k", "One")).unwrap();
        update(dir.path(), "k", Replace::Any, |prev| {
            let prev = prev.unwrap();
            SessionMeta {
                name: format!("{} two", prev.name),
                ..prev
            }
        })
        .unwrap();
        assert_eq!(
            crate::store::meta::read(dir.path(), "k")
                .unwrap()
                .unwrap()
                .name,
            "One two"
        );
    }

    #[test]
    fn a_write_removes_temp_files_left_by_dead_writers() {
        let dir = tempfile::tempdir().unwrap();
        let stale = dir.path().join(".s.meta.json.999.0.tmp");
        let other = dir.path().join(".t.meta.json.999.0.tmp");
        std::fs::write(&stale, "{\"partial").unwrap();
        std::fs::write(&other, "{\"partial").unwrap();
        write(dir.path(), &sample("s", "x")).unwrap();
        assert!(!stale.exists());
        assert!(
            other.exists(),
            "another session's temp file may belong to a live writer"
        );
    }

    /// `sessions-meta/.locks/<id>.lock` planted as a symlink (or `.locks`
    /// itself as one) is refused: no lock file appears where it points, and
    /// no meta file is written without its lock.
    #[cfg(unix)]
    #[test]
    fn a_planted_lock_symlink_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let victim = outside.path().join("victim");
        std::fs::create_dir_all(dir.path().join(LOCK_DIR)).unwrap();
        std::os::unix::fs::symlink(&victim, dir.path().join(LOCK_DIR).join("s1.lock")).unwrap();
        let err = write(dir.path(), &sample("s1", "one"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("s1.lock") && err.contains("symlink"), "{err}");
        assert!(!victim.exists());
        assert!(!dir.path().join("s1.meta.json").exists());

        let other = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), other.path().join(LOCK_DIR)).unwrap();
        let err = write(other.path(), &sample("s2", "two"))
            .unwrap_err()
            .to_string();
        assert!(err.contains(".locks") && err.contains("symlink"), "{err}");
        assert!(std::fs::read_dir(outside.path()).unwrap().next().is_none());
    }

    fn offline(id: &str, name: &str) -> SessionMeta {
        sample(id, name)
    }

    fn paid(id: &str, name: &str) -> SessionMeta {
        SessionMeta {
            model: "openai/gpt-4.1-mini".into(),
            ..sample(id, name)
        }
    }

    #[test]
    fn an_offline_document_never_replaces_a_model_written_one() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), &paid("p", "Paid")).unwrap();
        let refused = write(dir.path(), &offline("p", "Offline")).unwrap_err();
        assert!(
            matches!(&refused, MetaError::ModelWritten { model, .. } if model == "openai/gpt-4.1-mini"),
            "{refused}"
        );
        let read = |id| crate::store::meta::read(dir.path(), id).unwrap().unwrap();
        assert_eq!(read("p").name, "Paid");
        // A model's document replaces either; the offline one replaces its own kind.
        write(dir.path(), &paid("p", "Paid again")).unwrap();
        write(dir.path(), &offline("o", "Offline")).unwrap();
        write(dir.path(), &offline("o", "Offline again")).unwrap();
        write(dir.path(), &paid("o", "Paid over offline")).unwrap();
        assert_eq!(read("o").name, "Paid over offline");
        // Only when asked.
        update(dir.path(), "p", Replace::Any, |_| offline("p", "Forced")).unwrap();
        assert_eq!(read("p").name, "Forced");
    }

    #[test]
    fn a_writer_removes_any_temp_file_older_than_a_minute() {
        let dir = tempfile::tempdir().unwrap();
        let old = std::time::SystemTime::now() - STALE_TEMP_AGE - std::time::Duration::from_secs(5);
        let plant = |name: &str, modified: Option<std::time::SystemTime>| {
            let path = dir.path().join(name);
            let file = File::create(&path).unwrap();
            if let Some(modified) = modified {
                file.set_modified(modified).unwrap();
            }
            path
        };
        let other_old = plant(".t.meta.json.999.0.tmp", Some(old));
        let ledger_old = plant(".spending.json.999.tmp", Some(old));
        let other_new = plant(".t.meta.json.998.0.tmp", None);
        let not_ours = plant(".notes.tmp", Some(old));
        write(dir.path(), &sample("s", "x")).unwrap();
        assert!(!other_old.exists() && !ledger_old.exists());
        assert!(
            other_new.exists(),
            "a young temp file may be a live writer's"
        );
        assert!(not_ours.exists(), "only the store's own temp files");
    }

    #[test]
    fn meta_file_names_exclude_temp_and_lock_files() {
        assert!(is_meta_file_name("abc.meta.json"));
        assert!(!is_meta_file_name(".abc.meta.json.12.0.tmp"));
        assert!(!is_meta_file_name("abc.meta.json.lock"));
    }
}
