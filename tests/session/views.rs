//! The views over real fixtures: files touched, the indexing text, bounded
//! memory of large content, and the `session-index` binary.

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;
use session_index::session::views;
use session_index::session::{
    self, discovery, AgentMessage, Block, EntryKind, TOOL_TEXT_HEAD_UNITS,
};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/sessions")
        .join(name)
}

#[test]
fn files_touched_merge_tool_calls_and_pi_details() {
    let s = session::open(&fixture("compaction.jsonl")).unwrap();
    let files = views::files_touched(&s.branch(None));
    // edit + write → modified; read-only = read − modified; the fromHook
    // compaction's list (extension-only.md) is not pi's and is ignored.
    assert_eq!(files.read, ["docs/AUTH.md"]);
    assert_eq!(files.modified, ["src/auth.rs", "src/limiter.rs"]);

    let s = session::open(&fixture("branches-summary.jsonl")).unwrap();
    let leaf = "e0000011"; // "LFU it is." + read src/cache.rs, after the branch summary
    let files = views::files_touched(&s.branch(Some(leaf)));
    assert_eq!(files.read, ["src/cache.rs"]);
    assert_eq!(files.modified, ["src/lru.rs"]);
}

#[test]
fn index_text_has_user_and_assistant_text_only() {
    let s = session::open(&fixture("compaction.jsonl")).unwrap();
    let branch = s.branch(None);
    let text = views::index_text(&branch, false);
    assert_eq!(
        text,
        "User: Read the auth module\n\nUser: Now the limiter\n\nAssistant: Limiter reviewed.\n\n\
         User: Continue with tests\n\nAssistant: Writing tests.\n\nUser: After the second compaction"
    );
    let with_ids = views::index_text(&branch, true);
    assert!(with_ids
        .starts_with("[e0000003] User: Read the auth module\n\n[e0000006] User: Now the limiter"));
}

#[test]
fn large_content_is_bounded() {
    let s = session::open(&fixture("images-huge-output.jsonl")).unwrap();
    let mut images = Vec::new();
    let mut big_text = None;
    for e in &s.entries {
        let EntryKind::Message(m) = &e.kind else {
            continue;
        };
        let blocks: &[Block] = match m {
            AgentMessage::ToolResult { content, .. } => content,
            AgentMessage::User { content, .. } => content,
            _ => continue,
        };
        for b in blocks {
            match b {
                Block::Image { mime_type } => images.push(mime_type.clone()),
                Block::Text(t) if t.full_bytes > 100_000 => big_text = Some(t.clone()),
                _ => {}
            }
        }
    }
    // Three images (their base64 data is never read into memory).
    assert_eq!(images.len(), 3);
    let t = big_text.expect("the huge tool output");
    assert!(t.head.encode_utf16().count() <= TOOL_TEXT_HEAD_UNITS && !t.is_complete());
    assert_eq!(t.full_utf16_len, 5000 * 60);
}

#[test]
fn truncate_tail_defaults_keep_the_newest_part() {
    let text: String = (0..3000).map(|i| format!("line {i}\n")).collect();
    let t = views::truncate_tail(&text, views::DEFAULT_MAX_BYTES, views::DEFAULT_MAX_LINES);
    assert!(t.truncated);
    assert_eq!(t.total_lines, 3001);
    // The trailing newline makes an empty last line, which pi counts too.
    assert_eq!(t.text.split('\n').count(), 2000);
    assert!(t.text.starts_with("line 1001\n") && t.text.ends_with("line 2999\n"));
}

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_session-index"))
}

/// `inspect` of a copy of fixture `name` in the sessions directory of a temp
/// agent dir (a file argument is read only there).
fn inspect(name: &str, extra: &[&str]) -> std::process::Output {
    let agent = tempfile::tempdir().unwrap();
    let project = agent.path().join("sessions/--work-p--");
    std::fs::create_dir_all(&project).unwrap();
    let file = project.join(fixture(name).file_name().unwrap());
    std::fs::copy(fixture(name), &file).unwrap();
    bin()
        .arg("inspect")
        .args(extra)
        .arg(&file)
        .arg("--agent-dir")
        .arg(agent.path())
        .output()
        .unwrap()
}

#[test]
fn inspect_prints_one_json_document() {
    let out = inspect("branches-nosummary.jsonl", &[]);
    let doc = crate::support::json_output(&out);
    for key in [
        "id",
        "name",
        "leafId",
        "branchIds",
        "contextRoles",
        "serialized",
        "files",
        "warnings",
    ] {
        assert!(doc.get(key).is_some(), "missing {key}");
    }
    assert_eq!(doc["id"], "branch-plain");
    assert_eq!(doc["name"], "Cache design");

    let out = inspect("branches-nosummary.jsonl", &["--leaf", "e0000004"]);
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["leafId"], "e0000004");
    assert_eq!(
        doc["contextRoles"],
        serde_json::json!(["user", "assistant", "user", "assistant"])
    );
}

#[test]
fn inspect_rejects_non_sessions_with_one_line() {
    let out = inspect("divergent/not-a-session.jsonl", &[]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("not a pi session"), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(out.stdout.is_empty());
}

/// Issue 24: `inspect /etc/passwd` printed what it read. A file argument
/// outside the sessions directory is refused, by name, in one line, for
/// `inspect` and `show` alike, symlinked in or not.
#[test]
fn files_outside_the_sessions_directory_are_refused() {
    let agent = tempfile::tempdir().unwrap();
    let project = agent.path().join("sessions/--work-p--");
    std::fs::create_dir_all(&project).unwrap();
    let outside = agent.path().join("elsewhere.jsonl");
    std::fs::copy(fixture("branches-nosummary.jsonl"), &outside).unwrap();
    let link = project.join("link.jsonl");
    std::os::unix::fs::symlink(&outside, &link).unwrap();
    for command in ["inspect", "show"] {
        for file in [
            outside.as_path(),
            link.as_path(),
            std::path::Path::new("/etc/passwd"),
        ] {
            let out = bin()
                .arg(command)
                .arg(file)
                .arg("--agent-dir")
                .arg(agent.path())
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(
                out.status.code(),
                Some(1),
                "{command} {}: {stderr}",
                file.display()
            );
            assert!(out.stdout.is_empty(), "{command} {}", file.display());
            assert!(
                stderr.contains("outside the sessions directory"),
                "{stderr}"
            );
            assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
        }
    }
}

#[test]
fn list_reads_the_project_directory_pi_uses() {
    let agent = tempfile::tempdir().unwrap();
    let cwd = "/home/dev/proj";
    let dir = agent
        .path()
        .join("sessions")
        .join(discovery::encode_cwd(cwd));
    std::fs::create_dir_all(&dir).unwrap();
    for name in [
        "compaction.jsonl",
        "custom-entries.jsonl",
        "divergent/not-a-session.jsonl",
    ] {
        let file = fixture(name);
        std::fs::copy(&file, dir.join(file.file_name().unwrap())).unwrap();
    }
    let out = bin()
        .args(["list", "--json", "--wait", "--cwd", cwd, "--agent-dir"])
        .arg(agent.path())
        .output()
        .unwrap();
    let list = crate::support::json_output(&out);
    let ids = crate::support::ids(&list);
    assert_eq!(ids.len(), 2, "{ids:?}");
    assert!(ids.contains(&"compaction-session") && ids.contains(&"custom-session"));
    let custom = list
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == "custom-session")
        .unwrap();
    assert_eq!(custom["name"], "Custom things");
    assert_eq!(custom["firstMessage"], "Look at this  screenshot");

    let out = bin()
        .args(["list", "--json", "--wait", "--all", "--agent-dir"])
        .arg(agent.path())
        .output()
        .unwrap();
    let all: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(all.as_array().map(Vec::len), Some(2), "{all}");
}
