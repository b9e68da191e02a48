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

/// Two sessions stored: `s-gone` saying `word` (its path returned, for the
/// test to remove) and `s-kept` saying "tangerinebeacon".
fn gone_and_kept_stored(agent: &Agent, word: &str) -> std::path::PathBuf {
    let gone = write(agent, "/work/open", "s-gone", word);
    write(agent, "/work/open", "s-kept", "tangerinebeacon");
    drop(update(agent, &PrivacyConfig::default()));
    gone
}

/// Another process reading the store from now on (an open read
/// transaction): it keeps the WAL's frames, so a scrub cannot cut them.
fn reader_keeping_the_wal(agent: &Agent) -> rusqlite::Connection {
    let reader = rusqlite::Connection::open(session_index::store::store_path(&agent.dir)).unwrap();
    reader.execute_batch("BEGIN").unwrap();
    let _: i64 = reader
        .query_row("SELECT count(*) FROM sessions", [], |r| r.get(0))
        .unwrap();
    reader
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
    assert!(!report.forgot, "it forgot nothing: {report:?}");
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
    assert!(report.forgot, "{report:?}");
    assert!(!report.scrub.owed, "finished without a budget: {report:?}");
    drop(store);
    assert!(!holds(&agent.dir, "lanternfjord"), "the old word is gone");
    assert!(holds(&agent.dir, "quietharbor"));
}

/// The scrub a drop owes is recorded in the store: a process that ends
/// before it is done (here: a reader keeps the WAL, so the last part, its
/// cut, cannot be done) leaves it owed, and the next process finishes it,
/// even one whose files are unchanged (its freshness pass writes nothing).
#[test]
fn an_owed_scrub_outlives_its_process_and_the_next_finishes_it() {
    let agent = Agent::new();
    let gone = gone_and_kept_stored(&agent, "cormorantsplice");
    assert!(
        holds(&agent.dir, "cormorantsplice"),
        "stored (the test can fail)"
    );

    // Another process reading from before the drop keeps the WAL's frames.
    let reader = reader_keeping_the_wal(&agent);
    std::fs::remove_file(&gone).unwrap();
    let mut store = Store::open(&agent.dir).unwrap();
    let report = store
        .update(&agent.sessions(), &agent.meta_dir(), None)
        .unwrap();
    assert!(report.forgot, "{report:?}");
    assert!(report.scrub.owed, "the reader kept the WAL: {report:?}");
    drop(store);
    reader.execute_batch("COMMIT").unwrap();
    drop(reader);

    let mut next = Store::open(&agent.dir).unwrap();
    assert!(next.scrub_state().unwrap().owed, "recorded in the store");
    let report = next
        .update(&agent.sessions(), &agent.meta_dir(), None)
        .unwrap();
    assert_eq!(report.updated + report.removed, 0, "{report:?}");
    assert!(!report.scrub.owed, "finished: {report:?}");
    drop(next);
    assert!(
        !holds(&agent.dir, "cormorantsplice"),
        "the dropped word is gone"
    );
    assert!(holds(&agent.dir, "tangerinebeacon"));
}

/// A scrub that rewrites a full-text index too big for one step (200 ms)
/// takes the write lock in steps: another writer gets in while it is under
/// way (it reads the store's `scrub` counter at 2, merging, inside its own
/// write transaction), a third process appending to a session meanwhile
/// (its rows flushed into new segments mid-merge) does not keep it from
/// finishing, and the dropped words leave the store's bytes.
///
/// Nothing here hangs on timing: the other writer tries for the lock every
/// millisecond (no busy handler, whose sleeps grow to 100 ms), and whether
/// it must have got in mid-merge is decided by the merge steps the scrub
/// reports, not by how long the update took on a loaded machine.
#[test]
fn a_scrub_lets_other_writers_in_between_its_steps() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let agent = Agent::new();
    let mut rng = crate::support::rng::Rng(0x5eed_c0de);
    let mut word = || -> String {
        let n = rng.next();
        (0..7)
            .map(|i| (b'a' + ((n >> (i * 5)) % 26) as u8) as char)
            .collect()
    };
    let mut writers = Vec::new();
    for i in 0..1200 {
        let mut w =
            crate::support::search::Writer::new(&agent.dir, "/work/big", &format!("s{i:04}"));
        for _ in 0..6 {
            let text: Vec<String> = (0..120).map(|_| word()).collect();
            w.user(&text.join(" "));
        }
        writers.push(w);
    }
    let marked = crate::support::search::Writer::new(&agent.dir, "/work/big", "s-marked");
    let mut marked = marked;
    marked.user("the word pelicanquorum was said here");
    drop(update(&agent, &PrivacyConfig::default()));
    assert!(
        holds(&agent.dir, "pelicanquorum"),
        "stored (the test can fail)"
    );

    std::fs::remove_file(&marked.path).unwrap();
    let done = AtomicBool::new(false);
    let path = session_index::store::store_path(&agent.dir);
    let (phases, appended) = std::thread::scope(|scope| {
        let writer = scope.spawn(|| {
            let conn = rusqlite::Connection::open(&path).unwrap();
            conn.busy_timeout(std::time::Duration::ZERO).unwrap();
            let mut phases = Vec::new();
            while !done.load(Ordering::Relaxed) {
                if conn.execute_batch("BEGIN IMMEDIATE").is_err() {
                    // Busy: the scrub (or the appender) holds the lock.
                    std::thread::sleep(std::time::Duration::from_millis(1));
                    continue;
                }
                let phase: Option<i64> = conn
                    .query_row("SELECT value FROM counters WHERE name = 'scrub'", [], |r| {
                        r.get(0)
                    })
                    .ok();
                conn.execute_batch("COMMIT").unwrap();
                phases.push(phase);
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            phases
        });
        let appender = scope.spawn(|| {
            let mut store = Store::open(&agent.dir).unwrap();
            let mut w = crate::support::search::Writer::new(&agent.dir, "/work/big", "s-growing");
            let mut n = 0;
            while !done.load(Ordering::Relaxed) {
                w.user(&format!("appended turn {n} heronwaltz{n}"));
                store.update_file(&w.path, &agent.meta_dir()).unwrap();
                n += 1;
                std::thread::sleep(std::time::Duration::from_millis(30));
            }
            n
        });
        // Let the other two start before the drop.
        std::thread::sleep(std::time::Duration::from_millis(100));
        let mut store = Store::open(&agent.dir).unwrap();
        let began = std::time::Instant::now();
        let report = store
            .update(&agent.sessions(), &agent.meta_dir(), None)
            .unwrap();
        let took = began.elapsed();
        assert!(report.forgot && !report.scrub.owed, "{report:?}");
        done.store(true, Ordering::Relaxed);
        (
            (writer.join().unwrap(), took, report.scrub.merge_steps),
            appender.join().unwrap(),
        )
    });
    let (phases, took, steps) = phases;
    // Every pause between two merge steps leaves the lock free for 150 ms
    // with the counter at 2: with two such pauses or more the writer, trying
    // every millisecond, got in during one of them. (A scrub of one or two
    // steps may have finished before it was let in.)
    if steps >= 3 {
        assert!(
            phases.contains(&Some(2)),
            "another writer got the lock while the scrub was merging ({steps} steps, {took:?}): {phases:?}"
        );
    }
    eprintln!(
        "scrub under way {took:?} in {steps} merge steps; the writer saw phases {:?}",
        {
            let mut seen: Vec<_> = phases.clone();
            seen.dedup();
            seen
        }
    );
    assert!(appended > 0);
    let store = Store::open(&agent.dir).unwrap();
    assert_eq!(store.integrity_check().unwrap(), "ok");
    drop(store);
    assert!(
        !holds(&agent.dir, "pelicanquorum"),
        "the dropped word is gone"
    );
    assert!(
        holds(&agent.dir, "heronwaltz0"),
        "the appended text is kept"
    );
}

/// What the user sees: a search that could not finish the scrub (a reader
/// keeps the WAL) says on stderr that removed text is still in the index's
/// bytes, and `search --wait` finishes it, after which nothing is said.
#[test]
fn the_cli_says_while_removed_text_is_still_in_the_bytes() {
    let agent = Agent::new();
    let gone = gone_and_kept_stored(&agent, "albatrossgimlet");
    let search = |wait: bool| {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_session-index"));
        command.arg("search");
        if wait {
            command.arg("--wait");
        }
        let out = command
            .args(["--json", "--agent-dir"])
            .arg(&agent.dir)
            .arg("tangerinebeacon")
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stderr).unwrap()
    };
    let reader = reader_keeping_the_wal(&agent);
    std::fs::remove_file(&gone).unwrap();
    let said = search(false);
    assert!(said.contains("still in the index's bytes"), "{said}");
    assert!(said.contains("search --wait"), "{said}");
    reader.execute_batch("COMMIT").unwrap();
    drop(reader);
    let said = search(true);
    assert!(!said.contains("still in the index's bytes"), "{said}");
    assert!(
        !holds(&agent.dir, "albatrossgimlet"),
        "the removed word is gone"
    );
}
