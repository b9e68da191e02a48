//! Agent directories for measuring search: the target sessions of the
//! development set (`tests/fixtures/search-eval`) among distractors of one
//! of two kinds, [`generated`] (word salad around real sentences) and
//! [`docs`] (fluent sessions about npm packages' documentation).

pub mod docs;
pub mod generated;

use std::path::Path;

/// Which distractors surround the targets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Distractors {
    Generated,
    Docs,
}

impl Distractors {
    pub fn name(self) -> &'static str {
        match self {
            Distractors::Generated => "generated",
            Distractors::Docs => "docs",
        }
    }

    /// Writes `count` of them under `<agent>/sessions`.
    pub fn write(self, agent: &Path, count: usize) {
        match self {
            Distractors::Generated => generated::write(agent, count),
            Distractors::Docs => docs::write(agent, count),
        }
    }
}

/// `tests/fixtures/search-eval`.
pub fn search_eval_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/search-eval")
}

/// Copies the targets in: the shared real and generated sessions and the 16
/// sessions of the development set, each in its project's directory.
/// Returns how many files were copied.
pub fn copy_targets(agent: &Path) -> usize {
    let shared = super::search::copy_real_sessions(agent);
    let sessions = search_eval_dir().join("sessions");
    let mut copied = 0;
    for project in std::fs::read_dir(&sessions).expect("the development set's sessions") {
        let project = project.expect("a project directory");
        if !project.path().is_dir() {
            continue;
        }
        let into = agent.join("sessions").join(project.file_name());
        std::fs::create_dir_all(&into).expect("create a project directory");
        for file in std::fs::read_dir(project.path()).expect("a project's sessions") {
            let file = file.expect("a session file");
            std::fs::copy(file.path(), into.join(file.file_name())).expect("copy a session");
            copied += 1;
        }
    }
    shared + copied
}
