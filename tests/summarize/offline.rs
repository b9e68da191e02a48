//! The offline model over every real and pi-generated session available:
//! deterministic, and always valid under the same garde rules as a model's answer.

use std::path::PathBuf;

use crate::support::summarize::examples_dir;
use garde::Validate;
use session_index::features::summarize::extractive::{summarize, ExtractiveInput};

fn sessions() -> Vec<PathBuf> {
    let shared = crate::support::plugin::fixtures_dir();
    let mut files = Vec::new();
    for dir in [
        examples_dir(),
        shared.join("real"),
        shared.join("generated"),
    ] {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "jsonl") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

#[test]
fn offline_summaries_are_valid_and_deterministic_for_every_fixture() {
    let mut checked = 0;
    for path in sessions() {
        let Ok(session) = session_index::session::open(&path) else {
            continue;
        }; // the non-session fixture
        let branch = session.branch(None);
        let files = session_index::session::views::files_touched(&branch);
        let name = session.session_name(&branch);
        let input = ExtractiveInput {
            branch: &branch,
            session_name: name.as_deref(),
            cwd: &session.header.cwd,
            files: &files,
        };
        let first = summarize(&input);
        if let Err(report) = first.validate() {
            panic!(
                "{}: invalid offline summary: {report}\n{first:#?}",
                path.display()
            );
        }
        assert_eq!(
            first,
            summarize(&input),
            "{}: not deterministic",
            path.display()
        );
        for section in ["## Goal", "## Key Decisions", "## Outcome", "## Next Steps"] {
            assert!(
                first.summary.contains(section),
                "{}: no {section}",
                path.display()
            );
        }
        checked += 1;
    }
    assert!(checked >= 15, "only {checked} sessions checked");
}
