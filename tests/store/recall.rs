//! "Find the session": queries that paraphrase what a user remembers of a
//! real pi session (the shared fixtures), searched among thousands of
//! generated distractors that talk about the same things in passing (each
//! holds sentences drawn from the real sessions, amid developer vocabulary
//! drawn by Zipf's law).
//! The target must be among the first 3 results for at least 90% of the
//! queries, in each half: the queries were written before the ranking was
//! tuned, and only the `Tuned` half was looked at while tuning; the
//! `HeldOut` half checks that the tuning generalises.

use std::path::Path;

use crate::support::search::copy_real_sessions;
use session_index::store::{Query, Store};

#[derive(Clone, Copy, PartialEq, Debug)]
enum Half {
    Tuned,
    HeldOut,
}
use Half::{HeldOut, Tuned};

/// (half, target session id, what the user types).
const QUERIES: &[(Half, &str, &str)] = &[
    (
        Tuned,
        "fd67ceb3",
        "when the agent picked a star trek persona and called me admiral",
    ),
    (
        HeldOut,
        "fd67ceb3",
        "bootstrap identity setup where the bot became spock",
    ),
    (Tuned, "0a39b144", "asked the assistant what it is called"),
    (
        HeldOut,
        "0a39b144",
        "who are you question to the coding assistant",
    ),
    (
        Tuned,
        "eb684a84",
        "how much disk space the gitclaw folder takes",
    ),
    (
        HeldOut,
        "eb684a84",
        "node_modules making the directory huge",
    ),
    (Tuned, "31b7bf2a", "ways to get github to send an email"),
    (
        HeldOut,
        "31b7bf2a",
        "wrote a doc on notification emails and communication channels",
    ),
    (
        Tuned,
        "31b7bf2a",
        "assistant said it has no memory between conversations",
    ),
    (
        HeldOut,
        "0f864356",
        "comparison of my fork against the upstream original",
    ),
    (Tuned, "0f864356", "the sub-issue that never got an answer"),
    (
        HeldOut,
        "0f864356",
        "since forking report doc matching the ui of the other docs",
    ),
    (
        Tuned,
        "0f864356",
        "commits ahead of sawyerhood in the git log",
    ),
    (
        Tuned,
        "04a34e90",
        "who holds the copyright, mit license vs roadmap",
    ),
    (
        HeldOut,
        "04a34e90",
        "licensing question about the project roadmap",
    ),
    (
        Tuned,
        "c6015bf6",
        "is add-on the right github word for an agent",
    ),
    (
        HeldOut,
        "c6015bf6",
        "proper github terminology, app versus action versus add-on",
    ),
    (
        Tuned,
        "98e32e1b",
        "does pi retry when the api rate limits with 429",
    ),
    (
        HeldOut,
        "98e32e1b",
        "how pi copes with rate limit errors from the llm provider",
    ),
    (
        Tuned,
        "98e32e1b",
        "project status report with recent commits",
    ),
    (
        HeldOut,
        "bca1e6cc",
        "finding a new name for the gitclaw repo",
    ),
    (Tuned, "bca1e6cc", "repomind compared with gitclaw"),
    (
        HeldOut,
        "bca1e6cc",
        "what our fork changed relative to its parent project",
    ),
    (
        Tuned,
        "issue-4",
        "which model is the agent running on, claude opus",
    ),
    (HeldOut, "issue-4", "agents timeout seconds config not set"),
    (
        HeldOut,
        "issue-4",
        "check task 1.1 from the codex make it happen plan",
    ),
    (HeldOut, "64ddb985", "the session where I just said hail"),
];

/// Distractor sessions generated.
const DISTRACTORS: usize = 2000;

fn corpus(agent: &Path) {
    assert!(
        copy_real_sessions(agent) >= 10,
        "the shared fixtures hold real sessions"
    );
    crate::support::corpus::generated::write(agent, DISTRACTORS);
}

/// Measured: Tuned 12/13, HeldOut 13/14.
#[test]
fn the_remembered_session_is_in_the_top_3_for_nine_in_ten_paraphrases_in_each_half() {
    let (shares, report) = recall(&[Tuned, HeldOut], false);
    assert!(
        shares.iter().all(|&s| s >= 0.9),
        "a half below 90%:\n{report}"
    );
}

/// For tuning the ranking without seeing the held-out half: the `Tuned`
/// queries alone, and for each miss the results above the target, with
/// their scores and the rows that matched (role: text).
/// `cargo test --release --test search_recall tuned_half -- --ignored --nocapture`
#[test]
#[ignore = "diagnostics for tuning the ranking; run with --ignored --nocapture"]
fn tuned_half_misses_explained() {
    recall(&[Tuned], true);
}

/// The share of each half's queries whose target is in the top 3, and what
/// missed (with `detail`, the scores and matched rows of the results shown).
fn recall(halves: &[Half], detail: bool) -> (Vec<f64>, String) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let agent = dir.path();
    corpus(agent);
    let mut index = Store::open(agent).expect("open the index");
    index
        .update(&agent.join("sessions"), &agent.join("sessions-meta"), None)
        .expect("build the index");
    let (mut report, mut shares) = (String::new(), Vec::new());
    for &half in halves {
        let queries: Vec<_> = QUERIES.iter().filter(|q| q.0 == half).collect();
        let mut found = 0;
        for (_, target, text) in &queries {
            let hits = index
                .search(&Query {
                    limit: 10,
                    ..Query::parse(text).expect("a query")
                })
                .expect("search");
            let rank = hits.iter().position(|h| h.session.id.starts_with(target));
            let top3 = rank.is_some_and(|r| r < 3);
            found += usize::from(top3);
            if !top3 {
                let top: Vec<&str> = hits.iter().take(3).map(|h| h.session.id.as_str()).collect();
                report.push_str(&format!(
                    "  {half:?} {text:?}: {target} at {rank:?}, top {top:?}\n"
                ));
            }
            for hit in hits
                .iter()
                .take(rank.map_or(3, |r| r + 1))
                .filter(|_| detail && !top3)
            {
                report.push_str(&format!("    {:.2} {}\n", hit.score, hit.session.id));
                for s in &hit.snippets {
                    report.push_str(&format!(
                        "      {}: {}\n",
                        s.role,
                        s.marked("[", "]").replace('\n', " ")
                    ));
                }
            }
        }
        let share = found as f64 / queries.len() as f64;
        report.push_str(&format!(
            "{half:?}: {found}/{} in the top 3 ({:.0}%)\n",
            queries.len(),
            share * 100.0
        ));
        shares.push(share);
    }
    eprint!("{report}");
    (shares, report)
}
