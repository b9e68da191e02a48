//! Damaged input: every problem is counted, reading never stops, and the
//! cases where pi itself hangs or differs (divergent/) follow our documented
//! behaviour instead of parity:
//! - cyclic parents: pi's getBranch loops forever; we stop at the first
//!   repeated entry and count the cycle once.
//! - missing header: pi discards the whole file (and would start a new
//!   session over it); we keep the entries under a header whose id comes from
//!   the file name (`<timestamp>_<id>.jsonl`), and count `missingHeader`.
//!   Likewise a valid JSON line that is not an object (`null`, `[]`) before
//!   the header makes pi discard the file; we count it as malformed and read on.
//! - a `message` entry without a message object: pi throws (TypeError) when
//!   building the context; we keep it in the tree as an unknown entry.
//! - not a pi session / empty file: `SessionError::NotASession`.

use std::path::PathBuf;

use session_index::session::views;
use session_index::session::{self, AgentMessage, EntryKind, SessionError, Warnings};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/sessions")
        .join(name)
}

fn warnings(name: &str) -> Warnings {
    match session::open(&fixture(name)) {
        Ok(s) => s.warnings,
        Err(e) => panic!("{name}: {e}"),
    }
}

#[test]
fn each_problem_is_counted_by_kind() {
    let cases: &[(&str, Warnings)] = &[
        (
            "malformed-blank-lines.jsonl",
            Warnings {
                blank_lines: 2,
                ..Default::default()
            },
        ),
        (
            "malformed-bad-line.jsonl",
            Warnings {
                malformed_lines: 2,
                ..Default::default()
            },
        ),
        (
            "malformed-truncated-final.jsonl",
            Warnings {
                truncated_final_line: 1,
                ..Default::default()
            },
        ),
        (
            "malformed-invalid-utf8.jsonl",
            Warnings {
                invalid_utf8_lines: 1,
                ..Default::default()
            },
        ),
        (
            "malformed-dangling-parent.jsonl",
            Warnings {
                dangling_parents: 1,
                ..Default::default()
            },
        ),
        (
            "malformed-duplicate-ids.jsonl",
            Warnings {
                duplicate_ids: 1,
                ..Default::default()
            },
        ),
        (
            "malformed-garbage-before-header.jsonl",
            Warnings {
                malformed_lines: 1,
                ..Default::default()
            },
        ),
        ("malformed-crlf-bom.jsonl", Warnings::default()),
        (
            "custom-entries.jsonl",
            Warnings {
                unknown_entry_types: 1,
                ..Default::default()
            },
        ),
        ("v1-linear.jsonl", Warnings::default()),
        ("compaction.jsonl", Warnings::default()),
        (
            "divergent/cyclic-parents.jsonl",
            Warnings {
                cyclic_parents: 1,
                ..Default::default()
            },
        ),
        (
            "divergent/self-parent.jsonl",
            Warnings {
                cyclic_parents: 1,
                ..Default::default()
            },
        ),
        (
            "divergent/missing-header.jsonl",
            Warnings {
                missing_header: 1,
                ..Default::default()
            },
        ),
        (
            "divergent/message-without-message.jsonl",
            Warnings {
                unknown_entry_types: 1,
                ..Default::default()
            },
        ),
    ];
    for (name, want) in cases {
        assert_eq!(&warnings(name), want, "{name}");
    }
}

#[test]
fn reading_continues_past_damage() {
    let s = session::open(&fixture("malformed-bad-line.jsonl")).unwrap();
    let branch = s.branch(None);
    let text = views::serialize_context_refs(s.context_refs(&branch));
    assert!(
        text.contains("before the bad line") && text.contains("after the bad line"),
        "{text}"
    );

    let s = session::open(&fixture("malformed-invalid-utf8.jsonl")).unwrap();
    let text = views::serialize_context_refs(s.context_refs(&s.branch(None)));
    assert!(
        text.contains("bad bytes: \u{FFFD}") && text.contains("still read"),
        "{text}"
    );
}

#[test]
fn cyclic_parents_terminate() {
    let s = session::open(&fixture("divergent/cyclic-parents.jsonl")).unwrap();
    let ids: Vec<&str> = s.branch(None).iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids, ["a", "b", "c"]);
    for leaf in ["a", "b", "c"] {
        assert_eq!(s.branch(Some(leaf)).len(), 3, "leaf {leaf}");
    }
    let s = session::open(&fixture("divergent/self-parent.jsonl")).unwrap();
    let ids: Vec<&str> = s.branch(None).iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids, ["self"]);
}

#[test]
fn message_entry_without_message_stays_in_the_tree() {
    let s = session::open(&fixture("divergent/message-without-message.jsonl")).unwrap();
    assert_eq!(s.branch(None).len(), 3);
    let text = views::serialize_context_refs(s.context_refs(&s.branch(None)));
    assert_eq!(
        text,
        "[User]: before\n\n[Assistant]: after the entry pi cannot build a context from"
    );
}

#[test]
fn missing_header_keeps_entries() {
    let s = session::open(&fixture("divergent/missing-header.jsonl")).unwrap();
    assert_eq!(s.header.id, "missing-header");
    assert_eq!(s.entries.len(), 2);
    let text = views::serialize_context_refs(s.context_refs(&s.branch(None)));
    assert_eq!(
        text,
        "[User]: the header line is gone\n\n[Assistant]: entries remain"
    );
    assert_eq!(
        session::read_header(&fixture("divergent/missing-header.jsonl"))
            .unwrap()
            .id,
        "missing-header"
    );
}

#[test]
fn non_sessions_are_rejected() {
    let shared = crate::support::shared_dir::find_shared_dir()
        .map(|d| d.join("fixtures/pi-sessions/real/contact_form_example.jsonl"))
        .filter(|p| p.is_file());
    let mut files = vec![
        fixture("divergent/not-a-session.jsonl"),
        fixture("divergent/empty.jsonl"),
    ];
    files.extend(shared);
    for file in files {
        let err = session::open(&file).err();
        assert!(
            matches!(err, Some(SessionError::NotASession { .. })),
            "{}: {err:?}",
            file.display()
        );
        let msg = err.map(|e| e.to_string()).unwrap_or_default();
        assert!(
            msg.contains("not a pi session") && !msg.contains('\n'),
            "{msg}"
        );
        assert!(matches!(
            session::read_header(&file),
            Err(SessionError::NotASession { .. })
        ));
        assert!(matches!(
            session::summarize(&file),
            Err(SessionError::NotASession { .. })
        ));
    }
    let missing = fixture("does-not-exist.jsonl");
    assert!(matches!(
        session::open(&missing),
        Err(SessionError::Io { .. })
    ));
}

#[test]
fn v1_is_migrated_to_linear_ids() {
    let s = session::open(&fixture("v1-linear.jsonl")).unwrap();
    assert_eq!(s.header.version, 1);
    let mut prev: Option<&str> = None;
    for e in &s.entries {
        assert_eq!(e.parent_id.as_deref(), prev, "entry {}", e.id);
        prev = Some(&e.id);
    }
    // firstKeptEntryIndex 5 (header = 0) is the fifth entry: "Now add a README".
    let kept = s.entries.iter().find_map(|e| match &e.kind {
        EntryKind::Compaction {
            first_kept_entry_id,
            ..
        } => Some(first_kept_entry_id.clone()),
        _ => None,
    });
    assert_eq!(kept.as_deref(), Some(s.entries[4].id.as_str()));
    assert!(
        matches!(&s.entries[3].kind, EntryKind::Message(AgentMessage::Custom { custom_type, .. }) if custom_type == "hook")
    );
}

#[test]
fn v2_hook_message_becomes_custom() {
    let s = session::open(&fixture("v2-hookmessage.jsonl")).unwrap();
    let roles: Vec<&str> = s
        .entries
        .iter()
        .filter_map(|e| match &e.kind {
            EntryKind::Message(m) => Some(m.role()),
            _ => None,
        })
        .collect();
    assert_eq!(roles, ["user", "custom", "assistant"]);
}

#[test]
fn v3_hook_message_is_an_unknown_role() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v3.jsonl");
    std::fs::write(
        &path,
        concat!(
            r#"{"type":"session","version":3,"id":"x","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}"#,
            "\n",
            r#"{"type":"message","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"hookMessage","content":"h"}}"#,
            "\n",
        ),
    )
    .unwrap();
    let s = session::open(&path).unwrap();
    assert_eq!(s.warnings.unknown_entry_types, 1);
    assert_eq!(s.branch(None).len(), 1);
    assert!(s.context_refs(&s.branch(None)).next().is_none());
}
