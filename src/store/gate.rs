//! The gate: the one place where `privacy.exclude` and the sessions
//! directory's bounds are enforced on what leaves the store. Every record
//! read from the SQLite file ([`super::Store::records`], search hits) and
//! every session a lookup finds in the files ([`super::cache`]) passes
//! [`Gate::check`], so a caller cannot forget either rule: a record it gets
//! is of a session it may read.
//!
//! A file that is not (yet) a record, such as the session being summarized or
//! one being read into the store, is asked about with [`Gate::excludes`].

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::SessionRecord;
use crate::config::PrivacyConfig;

/// Why the gate keeps a session in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Its project or file matches `privacy.exclude`.
    Excluded,
    /// Its file is not inside the sessions directory.
    Outside,
}

#[derive(Debug, Default)]
pub struct Gate {
    privacy: PrivacyConfig,
    sessions_dir: PathBuf,
    /// The sessions directory with symlinks resolved (made on first need).
    real_sessions_dir: OnceLock<Option<PathBuf>>,
}

impl Clone for Gate {
    fn clone(&self) -> Gate {
        Gate::new(&self.sessions_dir, &self.privacy)
    }
}

impl Gate {
    pub fn new(sessions_dir: &Path, privacy: &PrivacyConfig) -> Gate {
        Gate {
            privacy: privacy.clone(),
            sessions_dir: sessions_dir.to_path_buf(),
            real_sessions_dir: OnceLock::new(),
        }
    }

    /// The same gate with `privacy`'s sessions kept in.
    pub fn with_privacy(&self, privacy: &PrivacyConfig) -> Gate {
        Gate::new(&self.sessions_dir, privacy)
    }

    /// Whether `record` may leave the store.
    pub fn check(&self, record: &SessionRecord) -> Result<(), Refusal> {
        if !self.inside(&record.path) {
            return Err(Refusal::Outside);
        }
        if self.excludes(&record.cwd, &record.path) {
            return Err(Refusal::Excluded);
        }
        Ok(())
    }

    /// Feed what decides which sessions the gate lets in (the sessions
    /// directory, `privacy.exclude`) to `state`: a freshness digest made
    /// under other rules is another one.
    pub(super) fn hash_rules(&self, state: &mut impl std::hash::Hasher) {
        use std::hash::Hash;
        self.sessions_dir.hash(state);
        self.privacy.exclude.hash(state);
    }

    /// Whether `privacy.exclude` names no session at all.
    pub fn excludes_none(&self) -> bool {
        self.privacy.exclude.is_empty()
    }

    /// Whether `privacy.exclude` names the session of project `cwd` in file `path`.
    pub fn excludes(&self, cwd: &str, path: &Path) -> bool {
        self.privacy.excludes(cwd, path)
    }

    /// Whether `path` is under the sessions directory, as spelled (without
    /// `..`) or with symlinks resolved (an agent directory reached through
    /// a symlink stores the paths of the spelling that updated it).
    pub fn inside(&self, path: &Path) -> bool {
        if self.lexically_inside(path) {
            return true;
        }
        let real_dir = self
            .real_sessions_dir
            .get_or_init(|| std::fs::canonicalize(&self.sessions_dir).ok());
        let Some(real_dir) = real_dir else {
            return false;
        };
        // A file that is gone is where its directory is.
        let real = std::fs::canonicalize(path).or_else(|_| {
            let (dir, name) = (path.parent().unwrap_or(path), path.file_name());
            std::fs::canonicalize(dir).map(|d| d.join(name.unwrap_or_default()))
        });
        real.is_ok_and(|real| real.starts_with(real_dir))
    }

    /// `path` spelled under the sessions directory, with no `..` segment:
    /// compared as bytes, since every record leaving the store is checked
    /// (10,000 of them when the cache loads) and the paths the store wrote
    /// are spelled so.
    fn lexically_inside(&self, path: &Path) -> bool {
        let dir = self.sessions_dir.as_os_str().as_encoded_bytes();
        let dir = dir.strip_suffix(b"/").unwrap_or(dir);
        let path = path.as_os_str().as_encoded_bytes();
        let Some(rest) = path.strip_prefix(dir) else {
            return false;
        };
        rest.first() == Some(&b'/') && !rest.split(|b| *b == b'/').any(|segment| segment == b"..")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(path: &str, cwd: &str) -> SessionRecord {
        SessionRecord {
            id: "s1".into(),
            path: PathBuf::from(path),
            cwd: cwd.into(),
            ..SessionRecord::default()
        }
    }

    #[test]
    fn keeps_in_what_is_excluded_or_outside_the_sessions_directory() {
        let privacy: PrivacyConfig =
            serde_json::from_value(serde_json::json!({"exclude": ["/work/secret"]})).unwrap();
        let gate = Gate::new(Path::new("/agent/sessions"), &privacy);
        let inside = "/agent/sessions/--p--/a.jsonl";
        assert_eq!(gate.check(&record(inside, "/work/p")), Ok(()));
        assert_eq!(
            gate.check(&record(inside, "/work/secret")),
            Err(Refusal::Excluded)
        );
        for outside in [
            "/elsewhere/sessions/--p--/a.jsonl",
            "/agent/sessions/../other/a.jsonl",
            "/agent/sessions-meta/a.jsonl",
        ] {
            assert_eq!(
                gate.check(&record(outside, "/work/p")),
                Err(Refusal::Outside),
                "{outside}"
            );
        }
    }

    #[test]
    fn a_symlinked_spelling_of_the_sessions_directory_is_inside() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real/sessions");
        std::fs::create_dir_all(real.join("--p--")).unwrap();
        std::fs::write(real.join("--p--/a.jsonl"), "").unwrap();
        std::os::unix::fs::symlink(dir.path().join("real"), dir.path().join("link")).unwrap();
        let gate = Gate::new(&real, &PrivacyConfig::default());
        let linked = dir.path().join("link/sessions/--p--/a.jsonl");
        assert!(gate.inside(&linked));
        assert!(gate.inside(&dir.path().join("link/sessions/--p--/gone.jsonl")));
        assert!(!gate.inside(&dir.path().join("link/a.jsonl")));
    }
}
