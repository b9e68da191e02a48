//! A CLI search trusts the last full pass over the session files for a
//! while instead of stat'ing every file (src/store/update/quick.rs): what it
//! must still see at once (a new, deleted or renamed file, a new meta file,
//! an append to or a rewrite of a session being written) and what it may
//! miss for at most `FULL_PASS_EVERY` (a change in place to an old session
//! by something that does not update the store); other privacy rules always
//! make a full pass (their sessions' rows leave the store at once). Real
//! binary, real files.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use serde_json::{json, Value};
use session_index::store::FULL_PASS_EVERY;

use crate::cli::run;
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

fn search(agent: &Agent, word: &str) -> Value {
    json_output(&run(
        &agent.dir,
        &["search", "--json", "--limit", "50", word],
    ))
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

/// Wait until every directory is older than a stamp may be, then search
/// twice: the first may read what changed, the second finds nothing to
/// read and keeps the stamp later searches trust (checked: without it,
/// what follows would not test the quick check).
fn stamped(agent: &Agent) {
    std::thread::sleep(SETTLE);
    search(agent, "apples");
    let again = search(agent, "apples");
    assert_eq!(again["index"]["updated"], 0, "{again}");
    let stamp = agent.dir.join("sessions-index/index.sqlite.quick");
    assert!(stamp.is_file(), "no quick stamp kept: {}", stamp.display());
}

#[test]
fn a_search_reads_the_sessions_being_written_at_once_and_old_ones_within_the_bound() {
    let (agent, files) = agent();
    let first = search(&agent, "apples");
    assert_eq!(first["index"]["updated"], SESSIONS, "{first}");
    stamped(&agent);

    // An append to an old session, by something that does not update the
    // store: trusted away for now (a pass would read it: this is the quick check).
    crate::support::append_lines(&files[0], &[user_line("zz000001", "zanzibar")]);
    let changed = Instant::now();
    let missed = search(&agent, "zanzibar");
    assert_eq!(missed["index"]["updated"], 0, "{missed}");
    assert!(ids(&missed).is_empty(), "{missed}");

    // An append to a session being written (one of the newest) is read now.
    crate::support::append_lines(&files[19], &[user_line("zz000002", "quetzal")]);
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
    // append is still unread, until the bound.
    assert!(ids(&search(&agent, "zanzibar")).is_empty());
    std::thread::sleep(FULL_PASS_EVERY.saturating_sub(changed.elapsed()));
    let within = search(&agent, "zanzibar");
    assert_eq!(ids(&within), [id(0)], "{within}");
}

#[test]
fn a_search_sees_files_created_deleted_and_renamed_and_new_meta_files_at_once() {
    let (agent, files) = agent();
    search(&agent, "apples");
    stamped(&agent);

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
    let (agent, _) = agent();
    search(&agent, "apples");
    stamped(&agent);

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
    let excluded = json_output(&run(&agent.dir, &args));
    assert_eq!(excluded["index"]["removed"], SESSIONS, "{excluded}");
    assert!(ids(&excluded).is_empty(), "{excluded}");
}
