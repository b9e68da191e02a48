//! Parity with the real pi 0.73.1: for every fixture (shared real and
//! pi-generated sessions, and the project's own), our reader must produce
//! what pi computed into tests/parity/golden/ (see gen-golden.mjs): branch
//! ids, session name, context roles and the serialized text byte for byte,
//! for the default leaf and every other leaf, and pi's list summary.

use std::path::{Path, PathBuf};

use serde_json::Value;
use session_index::session::views;
use session_index::session::{self, SessionError};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

use crate::support::shared_dir::find_shared_dir as shared;

fn fixture_sets() -> Vec<(&'static str, PathBuf)> {
    let mut sets = vec![("own", repo().join("tests/fixtures/sessions"))];
    if let Some(shared) = shared() {
        sets.push(("real", shared.join("fixtures/pi-sessions/real")));
        sets.push(("generated", shared.join("fixtures/pi-sessions/generated")));
    }
    sets
}

fn jsonl_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|r| r.filter_map(|e| e.ok()).map(|e| e.path()).collect())
        .unwrap_or_default();
    files.retain(|p| p.extension().is_some_and(|x| x == "jsonl"));
    files.sort();
    files
}

fn first_difference(a: &str, b: &str) -> String {
    let at = a
        .bytes()
        .zip(b.bytes())
        .position(|(x, y)| x != y)
        .unwrap_or(a.len().min(b.len()));
    let mut from = at.saturating_sub(60);
    while !a.is_char_boundary(from) || !b.is_char_boundary(from) {
        from -= 1;
    }
    let snip = |s: &str| {
        let mut to = (at + 60).min(s.len());
        while !s.is_char_boundary(to) {
            to -= 1;
        }
        s[from..to].to_string()
    };
    format!(
        "lengths {} vs {}, first difference at byte {at}:\n  ours: {:?}\n  pi:   {:?}",
        a.len(),
        b.len(),
        snip(a),
        snip(b)
    )
}

fn str_list(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .map(|x| x.as_str().unwrap_or_default().to_string())
                .collect()
        })
        .unwrap_or_default()
}

fn check_view(
    s: &session::Session,
    leaf: Option<&str>,
    want: &Value,
    random_ids: bool,
    label: &str,
    problems: &mut Vec<String>,
) {
    let branch = s.branch(leaf);
    let ids: Vec<String> = branch.iter().map(|e| e.id.to_string()).collect();
    let want_ids = str_list(&want["branchIds"]);
    if random_ids {
        if ids.len() != want_ids.len() {
            problems.push(format!(
                "{label}: branch length {} vs pi {}",
                ids.len(),
                want_ids.len()
            ));
        }
    } else if ids != want_ids {
        problems.push(format!(
            "{label}: branch ids differ:\n  ours: {ids:?}\n  pi:   {want_ids:?}"
        ));
    }
    let context: Vec<_> = s.context_refs(&branch).collect();
    let roles: Vec<String> = context.iter().map(|m| m.role().to_string()).collect();
    let want_roles = str_list(&want["contextRoles"]);
    if roles != want_roles {
        problems.push(format!(
            "{label}: context roles differ:\n  ours: {roles:?}\n  pi:   {want_roles:?}"
        ));
    }
    let serialized = views::serialize_context_refs(context);
    let want_serialized = want["serialized"].as_str().unwrap_or_default();
    if serialized != want_serialized {
        problems.push(format!(
            "{label}: serialized text differs: {}",
            first_difference(&serialized, want_serialized)
        ));
    }
}

fn check_fixture(file: &Path, golden: &Value, problems: &mut Vec<String>) {
    let label = file.display().to_string();
    if golden["notASession"].as_bool() == Some(true) {
        match session::open(file) {
            Err(e @ SessionError::NotASession { .. }) => {
                if !e.to_string().contains("not a pi session") {
                    problems.push(format!("{label}: message lacks 'not a pi session': {e}"));
                }
            }
            other => problems.push(format!(
                "{label}: pi rejects it, we gave {:?}",
                other.map(|s| s.header)
            )),
        }
        if session::summarize(file).is_ok() {
            problems.push(format!("{label}: listed although pi would not list it"));
        }
        return;
    }
    let s = match session::open(file) {
        Ok(s) => s,
        Err(e) => {
            problems.push(format!("{label}: {e}"));
            return;
        }
    };
    let random_ids = golden["randomIds"].as_bool().unwrap_or(false);
    if s.header.id != golden["sessionId"].as_str().unwrap_or_default() {
        problems.push(format!(
            "{label}: session id {} vs pi {}",
            s.header.id, golden["sessionId"]
        ));
    }
    if s.entries.len() as u64 != golden["entryCount"].as_u64().unwrap_or(u64::MAX) {
        problems.push(format!(
            "{label}: {} entries vs pi {}",
            s.entries.len(),
            golden["entryCount"]
        ));
    }
    let branch = s.branch(None);
    let name = s.session_name(&branch);
    if name.as_deref() != golden["sessionName"].as_str() {
        problems.push(format!(
            "{label}: session name {name:?} vs pi {}",
            golden["sessionName"]
        ));
    }
    if !random_ids && s.default_leaf_id() != golden["default"]["leafId"].as_str() {
        problems.push(format!(
            "{label}: default leaf {:?} vs pi {}",
            s.default_leaf_id(),
            golden["default"]["leafId"]
        ));
    }
    check_view(
        &s,
        None,
        &golden["default"],
        random_ids,
        &format!("{label} (default leaf)"),
        problems,
    );
    for leaf in golden["leaves"].as_array().into_iter().flatten() {
        let id = leaf["leafId"].as_str().unwrap_or_default();
        check_view(
            &s,
            Some(id),
            leaf,
            false,
            &format!("{label} (leaf {id})"),
            problems,
        );
    }

    let list = &golden["list"];
    if list.is_null() {
        return;
    }
    match session::summarize(file) {
        Err(e) => problems.push(format!("{label}: summarize: {e}")),
        Ok(sum) => {
            let first = sum
                .first_message
                .clone()
                .unwrap_or_else(|| "(no messages)".to_string());
            let checks = [
                ("id", Value::from(sum.id.clone()), list["id"].clone()),
                (
                    "name",
                    sum.name.clone().map_or(Value::Null, Value::from),
                    list["name"].clone(),
                ),
                (
                    "firstMessage",
                    Value::from(first),
                    list["firstMessage"].clone(),
                ),
                (
                    "messageCount",
                    Value::from(sum.message_count),
                    list["messageCount"].clone(),
                ),
                ("cwd", Value::from(sum.cwd.clone()), list["cwd"].clone()),
                (
                    "parentSession",
                    sum.parent_session.clone().map_or(Value::Null, Value::from),
                    list["parentSession"].clone(),
                ),
                (
                    "modified",
                    Value::from(sum.last_activity_ms),
                    list["modifiedMs"].clone(),
                ),
            ];
            for (what, ours, pi) in checks {
                if ours != pi {
                    problems.push(format!("{label}: list {what}: ours {ours} vs pi {pi}"));
                }
            }
        }
    }
}

#[test]
fn every_fixture_matches_pi() {
    let mut problems = Vec::new();
    let mut checked = 0;
    for (set, dir) in fixture_sets() {
        let golden_dir = repo().join("tests/parity/golden").join(set);
        for file in jsonl_files(&dir) {
            let name = file
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let golden_path = golden_dir.join(format!("{name}.json"));
            let Ok(text) = std::fs::read_to_string(&golden_path) else {
                problems.push(format!(
                    "{}: no golden (run node tests/parity/gen-golden.mjs)",
                    file.display()
                ));
                continue;
            };
            let golden: Value = match serde_json::from_str(&text) {
                Ok(v) => v,
                Err(e) => {
                    problems.push(format!("{}: bad golden: {e}", golden_path.display()));
                    continue;
                }
            };
            check_fixture(&file, &golden, &mut problems);
            checked += 1;
        }
    }
    assert!(checked >= 10, "only {checked} fixtures found");
    assert!(
        problems.is_empty(),
        "{} parity problems over {checked} fixtures:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn shared_fixtures_are_present() {
    // The shared fixtures are the main evidence of parity; a checkout without
    // them must fail loudly rather than pass on the own fixtures alone.
    let shared = shared().expect("../shared/fixtures/pi-sessions (or /work/shared) not found");
    assert!(!jsonl_files(&shared.join("fixtures/pi-sessions/real")).is_empty());
    assert!(!jsonl_files(&shared.join("fixtures/pi-sessions/generated")).is_empty());
}
