//! A search trusts the last full pass over the session files instead of
//! stat'ing every file (src/store/update/quick.rs), and each case its
//! guarantee names is checked here on the real binary and real files:
//! what it must see at once (a new, deleted or renamed file, a new meta
//! file, an append to or a rewrite of a session being written), what stays
//! quick (after a pass that wrote, after the plugin's write of its
//! session), and the missed case (a change in place to an old session by
//! something that does not update the store), read within the bound: the
//! rotating slice's searches, or the time bound. Other privacy rules always
//! make a full pass (their sessions' rows leave the store at once).
//!
//! No assertion hinges on timing: each search runs with the slice it needs
//! (`SESSION_INDEX_SLICE`; 0 where a test is about the rest) and the time
//! bound is passed in (`SESSION_INDEX_FULL_PASS_EVERY`); the only sleeps
//! make a directory older than a stamp may be, and waiting longer changes
//! nothing.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde_json::{json, Value};
use session_index::store::{Store, FULL_PASS_EVERY_ENV, SLICE_ENV};

use crate::cli::command;
use crate::support::json_output;
use crate::support::synth::{Agent, Synth};

const CWD: &str = "/home/u/proj";
/// More than a full pass's stamp may be changed within (quick.rs' `RACY`, 2 s).
const SETTLE: Duration = Duration::from_millis(2_300);
/// Sessions in the agent dir: more than the 16 hot ones a search checks.
const SESSIONS: usize = 20;

fn id(i: usize) -> String {
    format!("0000{i:04}-aaaa-4bbb-8ccc-dddddddddddd")
}

/// Session `i` says `marker<i>`; the lower `i`, the longer ago it was
/// modified (sessions 0-3 are not among the 16 newest).
fn agent() -> (Agent, Vec<PathBuf>) {
    let agent = Agent::new();
    let now = SystemTime::now();
    let files: Vec<PathBuf> = (0..SESSIONS)
        .map(|i| {
            let said = format!("task number {i} about apples marker{i}");
            let path = agent.session(&Synth::new(&id(i), CWD).user(&[&said]));
            let age = Duration::from_secs(1_000 - i as u64);
            set_mtime(&path, now - age);
            path
        })
        .collect();
    (agent, files)
}

fn set_mtime(path: &Path, t: SystemTime) {
    let file = std::fs::File::options().write(true).open(path).unwrap();
    file.set_modified(t).unwrap();
}

/// A search that checks no slice of the stored sessions: what it reads,
/// it reads by the directories' times and the hot files (or a full pass).
fn search(agent: &Agent, word: &str) -> Value {
    search_with(agent, word, &[(SLICE_ENV, "0")])
}

fn search_with(agent: &Agent, word: &str, env: &[(&str, &str)]) -> Value {
    let mut cmd = command(&agent.dir, &["search", "--json", "--limit", "50", word]);
    cmd.envs(env.iter().copied());
    json_output(&cmd.output().unwrap())
}

/// The ids of a search's results, best first.
fn ids(doc: &Value) -> Vec<&str> {
    crate::support::ids(&doc["results"])
}

fn user_line(entry: &str, text: &str) -> Value {
    json!({"type": "message", "id": entry, "parentId": null,
        "timestamp": "2026-11-27T12:00:00.000Z",
        "message": {"role": "user", "content": text, "timestamp": 1}})
}

/// An append by pi (with or without the plugin) to session `file`.
fn say(file: &Path, entry: &str, text: &str) {
    crate::support::append_lines(file, &[user_line(entry, text)]);
}

/// Wait until every directory is older than a stamp may be, then search
/// twice: the first may read what changed, the second finds nothing to
/// read and keeps the stamp later searches trust (checked: without it,
/// what follows would not test the quick check).
fn stamped(agent: &Agent) {
    std::thread::sleep(SETTLE);
    search(agent, "apples");
    let again = search(agent, "apples");
    assert_eq!(again["index"]["updated"], 0, "{again}");
    assert!(quick_stamp(agent).is_file(), "no quick stamp kept");
}

/// [`agent`]'s sessions stored, and the stamp of a pass that found them so.
fn stamped_agent() -> (Agent, Vec<PathBuf>) {
    let (agent, files) = agent();
    search(&agent, "apples");
    stamped(&agent);
    (agent, files)
}

fn quick_stamp(agent: &Agent) -> PathBuf {
    agent.dir.join("sessions-index/index.sqlite.quick")
}

/// An append to an old session by something that does not update the
/// store, trusted away by a search that checks no slice (a full pass
/// would read it: this is the quick check).
fn missed_append(agent: &Agent, file: &Path, word: &str) {
    say(file, "zz000001", word);
    let missed = search(agent, word);
    assert_eq!(missed["index"]["updated"], 0, "{missed}");
    assert!(ids(&missed).is_empty(), "{missed}");
}

#[test]
fn a_search_reads_the_sessions_being_written_at_once() {
    let (agent, files) = agent();
    let first = search(&agent, "apples");
    assert_eq!(first["index"]["updated"], SESSIONS, "{first}");
    stamped(&agent);
    missed_append(&agent, &files[0], "zanzibar");

    // An append to a session being written (one of the newest) is read now.
    say(&files[19], "zz000002", "quetzal");
    let appended = search(&agent, "quetzal");
    assert_eq!(appended["index"]["updated"], 1, "{appended}");
    assert_eq!(ids(&appended), [id(19)], "{appended}");

    // So is a rewrite in place of one (same file, other text).
    agent.session(&Synth::new(&id(18), CWD).user(&["only marmalade now"]));
    let rewritten = search(&agent, "marmalade");
    assert_eq!(ids(&rewritten), [id(18)], "{rewritten}");
    let apples = search(&agent, "apples");
    assert!(!ids(&apples).contains(&id(18).as_str()), "{apples}");
    assert_eq!(ids(&apples).len(), SESSIONS - 1, "{apples}");

    // Those searches' own writes left the stamp trusted: the old session's
    // append is still unread.
    assert!(ids(&search(&agent, "zanzibar")).is_empty());
}

#[test]
fn an_old_sessions_change_is_read_within_the_slices_searches() {
    let (agent, files) = stamped_agent();
    missed_append(&agent, &files[0], "zanzibar");

    // Searches checking 8 stored sessions each, each after the last one's:
    // every one of the 20 within 3 searches.
    let slice = [(SLICE_ENV, "8")];
    let bound = SESSIONS.div_ceil(8);
    let seen = (1..=bound).find(|_| !ids(&search_with(&agent, "zanzibar", &slice)).is_empty());
    assert!(seen.is_some(), "unread after {bound} searches");
    assert_eq!(ids(&search(&agent, "zanzibar")), [id(0)]);

    // Found changed, it is hot now: its next append is read by the next
    // search, slice or none.
    say(&files[0], "zz000002", "ocelot");
    assert_eq!(ids(&search(&agent, "ocelot")), [id(0)]);
}

#[test]
fn an_old_sessions_change_is_read_once_the_time_bound_passed() {
    let (agent, files) = stamped_agent();
    missed_append(&agent, &files[0], "zanzibar");

    // A bound of 1 s, passed: the stamp is too old and the search makes a
    // full pass (the pass began before the sleep ends: a loaded machine
    // only makes it older).
    std::thread::sleep(Duration::from_millis(1_100));
    let bound = [(SLICE_ENV, "0"), (FULL_PASS_EVERY_ENV, "1")];
    let within = search_with(&agent, "zanzibar", &bound);
    assert_eq!(ids(&within), [id(0)], "{within}");
}

#[test]
fn the_stores_write_of_one_session_leaves_the_next_search_quick() {
    let (agent, files) = stamped_agent();

    // An agent run in an old session, and the store's write of that one
    // file (`Store::update_file`, the library's per-file update).
    say(&files[1], "zz000001", "pelican");
    let mut store = Store::open(&agent.dir).unwrap();
    assert!(store.update_file(&files[1], &agent.meta_dir()).unwrap());
    drop(store);

    // The next search trusts the stamp still (an old session's append by
    // something else stays unread: no full pass) and finds the plugin's.
    missed_append(&agent, &files[0], "zanzibar");
    assert_eq!(ids(&search(&agent, "pelican")), [id(1)]);

    // That session is among the files every search checks now.
    say(&files[1], "zz000002", "ocelot");
    assert_eq!(ids(&search(&agent, "ocelot")), [id(1)]);
}

#[test]
fn a_full_pass_that_wrote_leaves_the_next_search_quick() {
    let (agent, files) = stamped_agent();

    // A pass over every file that reads an old session's append (`--wait`,
    // `index`, the plugin's refresh after an agent run).
    say(&files[1], "zz000001", "pelican");
    let quick = search(&agent, "pelican");
    let mut cmd = command(&agent.dir, &["search", "--json", "--wait", "pelican"]);
    cmd.env(SLICE_ENV, "0");
    let waited = json_output(&cmd.output().unwrap());
    assert!(ids(&quick).is_empty(), "{quick}");
    assert_eq!(ids(&waited), [id(1)], "{waited}");

    // The next search trusts that pass: an old session's append by
    // something else stays unread.
    missed_append(&agent, &files[0], "zanzibar");
}

#[test]
fn a_search_sees_files_created_deleted_and_renamed_and_new_meta_files_at_once() {
    let (agent, files) = stamped_agent();

    let new = agent.session(&Synth::new(&id(90), CWD).user(&["a new xylophone session"]));
    let created = search(&agent, "xylophone");
    assert_eq!(ids(&created), [id(90)], "{created}");
    let _ = new;

    stamped(&agent);
    std::fs::remove_file(&files[1]).unwrap();
    let deleted = search(&agent, "marker1");
    assert_eq!(deleted["index"]["removed"], 1, "{deleted}");
    assert!(ids(&deleted).is_empty(), "{deleted}");

    stamped(&agent);
    let renamed_to = files[2].with_file_name(format!("2026-03-01T00-00-00-000Z_{}.jsonl", id(2)));
    std::fs::rename(&files[2], &renamed_to).unwrap();
    let renamed = search(&agent, "marker2");
    let paths: Vec<&str> = renamed["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["path"].as_str())
        .collect();
    assert_eq!(paths, [renamed_to.to_str().unwrap()], "{renamed}");

    stamped(&agent);
    agent.meta(&id(3), "Nightingale", "", &["ornithology"], "", &files[3]);
    let named = search(&agent, "nightingale");
    assert_eq!(ids(&named), [id(3)], "{named}");
}

#[test]
fn a_search_under_other_privacy_rules_passes_over_every_file() {
    let (agent, _) = stamped_agent();

    // The sessions' rows and text leave the store now, not within the bound.
    let config = agent.dir.join("private.json");
    std::fs::write(&config, json!({"privacy": {"exclude": [CWD]}}).to_string()).unwrap();
    let args = [
        "search",
        "--json",
        "--config",
        config.to_str().unwrap(),
        "apples",
    ];
    let mut cmd = command(&agent.dir, &args);
    cmd.env(SLICE_ENV, "0");
    let excluded = json_output(&cmd.output().unwrap());
    assert_eq!(excluded["index"]["removed"], SESSIONS, "{excluded}");
    assert!(ids(&excluded).is_empty(), "{excluded}");
}
