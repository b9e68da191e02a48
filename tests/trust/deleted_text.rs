//! Issue 24: the store never keeps deleted text. A session that is
//! excluded after it was stored, deleted, or rewritten leaves no byte of its
//! old text in `index.sqlite` or its WAL once the next update ran (SQLite's
//! `secure_delete`, the full-text index merged, the WAL cut after a drop), and an
//! excluded session's rows go, not only its records from the results.

use std::path::Path;

use crate::support::synth::{encode_cwd, Agent};
use serde_json::json;
use session_index::config::PrivacyConfig;
use session_index::store::Store;

fn write(agent: &Agent, cwd: &str, id: &str, words: &str) -> std::path::PathBuf {
    let dir = agent.sessions().join(encode_cwd(cwd));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("2026-02-20T12-00-00-000Z_{id}.jsonl"));
    let ts = "2026-02-20T12:00:00.000Z";
    let lines = [
        json!({"type": "session", "version": 3, "id": id, "timestamp": ts, "cwd": cwd}),
        json!({"type": "message", "id": "e1", "parentId": null, "timestamp": ts,
            "message": {"role": "user", "content": format!("first {words}"), "timestamp": 1}}),
        json!({"type": "message", "id": "e2", "parentId": "e1", "timestamp": ts,
            "message": {"role": "assistant", "content": [{"type": "text", "text": format!("about {words} then")}], "timestamp": 2}}),
    ];
    let body: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&path, body).unwrap();
    path
}

/// The bytes of the store's files (database, WAL, shared memory).
fn store_bytes(agent: &Path) -> Vec<u8> {
    let mut bytes = Vec::new();
    for file in std::fs::read_dir(agent.join("sessions-index")).unwrap() {
        bytes.extend(std::fs::read(file.unwrap().path()).unwrap_or_default());
    }
    bytes
}

fn holds(agent: &Path, word: &str) -> bool {
    store_bytes(agent)
        .windows(word.len())
        .any(|w| w == word.as_bytes())
}

fn update(agent: &Agent, privacy: &PrivacyConfig) -> Store {
    let mut store = Store::open(&agent.dir).unwrap().excluding(privacy);
    store
        .update(&agent.sessions(), &agent.meta_dir(), None)
        .unwrap();
    store
}

#[test]
fn excluded_deleted_and_rewritten_sessions_leave_no_bytes() {
    let agent = Agent::new();
    let none = PrivacyConfig::default();
    write(&agent, "/work/secretproj", "s-excluded", "xylophonequark");
    let deleted = write(&agent, "/work/open", "s-deleted", "marzipanvortex");
    let rewritten = write(&agent, "/work/open", "s-rewritten", "obsidianwalrus");
    write(&agent, "/work/open", "s-kept", "tangerinebeacon");
    let store = update(&agent, &none);
    assert_eq!(store.records().unwrap().len(), 4);
    drop(store);
    for word in ["xylophonequark", "marzipanvortex", "obsidianwalrus"] {
        assert!(
            holds(&agent.dir, word),
            "{word} was stored (the test can fail)"
        );
    }

    // Excluded now: its rows go at the next update, and with them its bytes.
    let privacy: PrivacyConfig =
        serde_json::from_value(json!({"exclude": ["/work/secretproj"]})).unwrap();
    std::fs::remove_file(&deleted).unwrap();
    std::fs::write(
        &rewritten,
        std::fs::read_to_string(&rewritten)
            .unwrap()
            .replace("obsidianwalrus", "quietharbor"),
    )
    .unwrap();
    let store = update(&agent, &privacy);
    let ids: Vec<String> = store.records().unwrap().into_iter().map(|r| r.id).collect();
    assert_eq!(ids.len(), 2, "{ids:?}");
    assert!(!ids.contains(&"s-excluded".to_string()));
    // While the store is open (as in a running pi: its WAL is there too).
    only_live_text(&agent.dir);
    // Without the rule it is not there either: its rows went, not only its record.
    drop(store);
    let unfiltered = Store::open(&agent.dir).unwrap();
    assert_eq!(unfiltered.records().unwrap().len(), 2);
    assert_eq!(unfiltered.integrity_check().unwrap(), "ok");
    drop(unfiltered);
    only_live_text(&agent.dir);
}

/// The dropped sessions' words are in no byte of the store's files; the
/// live ones' are.
fn only_live_text(agent: &Path) {
    for word in ["xylophonequark", "marzipanvortex", "obsidianwalrus"] {
        assert!(!holds(agent, word), "{word} is still in the store's bytes");
    }
    for word in ["tangerinebeacon", "quietharbor"] {
        assert!(holds(agent, word), "{word}: live text is kept");
    }
}

/// A session file replaced by one that holds the same text (a sync tool or
/// an editor writing a new file, pi migrating an old session) is read again
/// whole, and forgets nothing: no scrub, which writes the whole full-text
/// index again (57 s at 30,000 sessions). One whose text changed is scrubbed,
/// and its old words leave the store's bytes.
#[test]
fn a_file_rewritten_with_the_same_text_costs_no_scrub() {
    let agent = Agent::new();
    let none = PrivacyConfig::default();
    let path = write(&agent, "/work/open", "s-same", "lanternfjord");
    write(&agent, "/work/open", "s-other", "tangerinebeacon");
    let mut store = Store::open(&agent.dir).unwrap();
    let report = store
        .update(&agent.sessions(), &agent.meta_dir(), None)
        .unwrap();
    assert_eq!(report.updated, 2);
    drop(store);

    // The same bytes in a new file (another inode) put in its place.
    let same = std::fs::read(&path).unwrap();
    let temp = path.with_extension("tmp");
    std::fs::write(&temp, &same).unwrap();
    std::fs::rename(&temp, &path).unwrap();
    let mut store = Store::open(&agent.dir).unwrap().excluding(&none);
    let report = store
        .update(&agent.sessions(), &agent.meta_dir(), None)
        .unwrap();
    assert_eq!(report.updated, 1, "read again whole: {report:?}");
    assert!(!report.scrubbed, "it forgot nothing: {report:?}");
    let found = store
        .search(&session_index::store::Query::parse("lanternfjord").unwrap())
        .unwrap();
    assert_eq!(found.len(), 1);

    // Its text changed: the old words go, with a scrub.
    std::fs::write(
        &path,
        String::from_utf8(same)
            .unwrap()
            .replace("lanternfjord", "quietharbor"),
    )
    .unwrap();
    let report = store
        .update(&agent.sessions(), &agent.meta_dir(), None)
        .unwrap();
    assert_eq!(report.updated, 1, "{report:?}");
    assert!(report.scrubbed, "{report:?}");
    drop(store);
    assert!(!holds(&agent.dir, "lanternfjord"), "the old word is gone");
    assert!(holds(&agent.dir, "quietharbor"));
}
