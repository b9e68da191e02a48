//! The search index shared by real processes: several `session-index search`
//! processes updating one index while sessions grow, and a SIGKILL in the
//! middle of a build. Afterwards the file passes `PRAGMA integrity_check` and
//! every session's rows are exactly its file's entries (nothing lost, nothing
//! twice).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::support::search::Writer;
use serde_json::json;
use session_index::store::{store_path, Store};

const BIN: &str = env!("CARGO_BIN_EXE_session-index");

fn search_process(agent: &Path, word: &str) -> std::process::Child {
    Command::new(BIN)
        .args(["search", "--wait", "--json", "--agent-dir"])
        .arg(agent)
        .arg(word)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn session-index search")
}

/// Sessions with enough text that a build takes a while.
fn corpus(agent: &Path, sessions: usize, turns: usize) -> Vec<Writer> {
    let filler = "the quick brown fox jumps over the lazy dog while the build runs ".repeat(20);
    (0..sessions)
        .map(|i| {
            let mut w = Writer::new(agent, &format!("/p/{}", i % 3), &format!("s{i:04}"));
            for t in 0..turns {
                w.user(&format!("turn {t} of session {i}: keyword{i} please"));
                w.tool(
                    "bash",
                    json!({"command": format!("make target{t}")}),
                    &filler,
                );
                w.assistant(&format!("done with turn {t}; {filler}"));
            }
            w
        })
        .collect()
}

/// Every indexed session holds exactly the entries of its file.
fn assert_consistent(agent: &Path) {
    let index = Store::open(agent).expect("open the index");
    assert_eq!(index.integrity_check().expect("integrity check"), "ok");
    let conn = rusqlite::Connection::open(store_path(agent)).expect("open the file");
    let rows: Vec<(String, i64, i64)> = conn
        .prepare(
            "SELECT s.path, s.read_to, (SELECT COUNT(*) FROM entries e WHERE e.rowid >> 20 = s.sid) FROM sessions s",
        )
        .and_then(|mut st| st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?.collect())
        .expect("read the sessions");
    for (path, read_to, entries) in rows {
        let text = std::fs::read(&path).expect("read a session file");
        let read = &text[..read_to as usize];
        let lines = read.iter().filter(|&&b| b == b'\n').count() as i64;
        assert_eq!(
            entries,
            lines - 1,
            "{path}: entries in the index vs complete lines after the header"
        );
    }
    // The text is not stored (snippets read it again from the file): each
    // entry with text has its size, each session its meta text.
    let text_rows: i64 = conn
        .query_row(
            "SELECT (SELECT COUNT(*) FROM entries WHERE bytes > 0) + (SELECT COUNT(*) FROM meta_text)",
            [],
            |r| r.get(0),
        )
        .expect("count");
    let expected: i64 = conn
        .query_row(
            "SELECT (SELECT COUNT(*) FROM entries WHERE col IS NOT NULL) + (SELECT COUNT(*) FROM sessions)",
            [],
            |r| r.get(0),
        )
        .expect("count");
    assert_eq!(
        text_rows, expected,
        "text rows: one per indexed entry and one per session"
    );
    // Ranking rows: each session's meta row, chunks starting at its text rows, none orphaned.
    let count = |sql: &str| {
        conn.query_row(sql, [], |r| r.get::<_, i64>(0))
            .expect("count")
    };
    let no_meta = "SELECT COUNT(*) FROM sessions s WHERE NOT EXISTS (SELECT 1 FROM docs WHERE rowid = s.sid << 20)";
    assert_eq!(count(no_meta), 0, "every session has its meta ranking row");
    assert_eq!(
        count(
            "SELECT COUNT(*) FROM docs WHERE rowid NOT IN (SELECT rowid FROM entries WHERE bytes > 0) \
             AND rowid NOT IN (SELECT sid << 20 FROM sessions)"
        ),
        0,
        "orphan ranking rows"
    );
    let unranked = "SELECT COUNT(*) FROM sessions s WHERE EXISTS (SELECT 1 FROM entries e WHERE e.rowid >> 20 = s.sid \
         AND col IS NOT NULL) AND NOT EXISTS (SELECT 1 FROM docs d WHERE d.rowid > s.sid << 20 AND d.rowid < (s.sid + 1) << 20)";
    assert_eq!(
        count(unranked),
        0,
        "every session with text has a ranking chunk"
    );
}

#[test]
fn several_processes_update_one_index_while_sessions_grow() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let agent = dir.path();
    let mut writers = corpus(agent, 30, 4);
    let mut children: Vec<_> = (0..4)
        .map(|i| search_process(agent, &format!("keyword{i}")))
        .collect();
    // Sessions grow while the processes update; then a second round of processes.
    for round in 0..3 {
        for w in writers.iter_mut().step_by(3) {
            w.user(&format!("appended round {round} mentions ocelot{round}"));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    children.extend((0..4).map(|i| search_process(agent, &format!("ocelot{}", i % 3))));
    for child in children {
        let out = child.wait_with_output().expect("wait for a search process");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON output");
        assert!(doc["results"].is_array());
    }
    // The last process ran after every append: it found all of them.
    let out = search_process(agent, "ocelot2")
        .wait_with_output()
        .expect("a last search");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON output");
    assert_eq!(doc["results"].as_array().map(Vec::len), Some(10), "{doc}");
    assert_consistent(agent);
}

#[test]
fn sigkill_during_a_build_leaves_a_consistent_index() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let agent = dir.path();
    corpus(agent, 120, 6);
    let mut killed = 0;
    for wait_ms in [150, 400] {
        let mut child = search_process(agent, "keyword1");
        std::thread::sleep(Duration::from_millis(wait_ms));
        if child.try_wait().expect("poll").is_none() {
            child.kill().expect("SIGKILL");
            killed += 1;
        }
        let _ = child.wait();
        assert_consistent(agent);
    }
    assert!(
        killed > 0,
        "the build finished before any kill: make the corpus bigger"
    );
    let out = search_process(agent, "keyword7")
        .wait_with_output()
        .expect("a search after the kills");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON output");
    assert_eq!(doc["results"][0]["id"], "s0007", "{doc}");
    assert_eq!(doc["index"]["stale"], 0);
    assert_consistent(agent);
    let index = Store::open(agent).expect("open");
    assert_eq!(index.records().expect("sessions").len(), 120);
}
