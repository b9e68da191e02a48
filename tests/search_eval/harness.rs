//! Building an evaluation corpus and running the queries through the
//! rankings: the store's search (the function `session-index search --json`
//! calls, with its defaults: every project, none ranked first), and the
//! rankings computed beside it.

use std::path::PathBuf;
use std::time::Instant;

use session_index::store::{Query, Store};

use super::dev_set::DevQuery;
use super::report::Ranks;
use crate::support::corpus::{copy_targets, Distractors};

/// Sessions each ranking returns per query: enough for top-10, and the
/// candidates a fusion of two rankings takes from each.
pub const DEPTH: usize = 50;

/// What surrounds the targets.
#[derive(Debug, Clone, Copy)]
pub struct Corpus {
    pub distractors: Distractors,
    pub count: usize,
}

/// A corpus written and indexed in a temporary agent directory.
pub struct Built {
    _dir: tempfile::TempDir,
    pub store: Store,
    pub sessions: usize,
    pub bytes: u64,
    pub write_secs: f64,
    pub index_secs: f64,
}

impl Corpus {
    pub fn describe(&self) -> String {
        format!("{} {} distractors", self.count, self.distractors.name())
    }

    /// Writes the targets and the distractors, and builds the store from
    /// them, in a temporary directory, or under `$SEARCH_EVAL_KEEP/<corpus>`
    /// (kept, to look at or to search with the CLI's `--agent-dir`).
    pub fn build(&self) -> Built {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let agent = match std::env::var_os("SEARCH_EVAL_KEEP") {
            Some(keep) => {
                let agent =
                    PathBuf::from(keep).join(format!("{}-{}", self.distractors.name(), self.count));
                let _ = std::fs::remove_dir_all(&agent);
                agent
            }
            None => dir.path().to_path_buf(),
        };
        let started = Instant::now();
        let targets = copy_targets(&agent);
        assert!(targets >= 32, "the targets: {targets} files");
        self.distractors.write(&agent, self.count);
        let write_secs = started.elapsed().as_secs_f64();
        let started = Instant::now();
        let mut store = Store::open(&agent).expect("open the store");
        let report = store
            .update(&agent.join("sessions"), &agent.join("sessions-meta"), None)
            .expect("build the store");
        let index_secs = started.elapsed().as_secs_f64();
        let files = session_index::session::discovery::session_files(&agent.join("sessions"));
        let bytes = files
            .iter()
            .filter_map(|f| f.metadata().ok())
            .map(|m| m.len())
            .sum();
        Built {
            _dir: dir,
            store,
            sessions: report.files,
            bytes,
            write_secs,
            index_secs,
        }
    }
}

impl Built {
    pub fn describe(&self, corpus: &Corpus) -> String {
        format!(
            "{} ({} sessions, {:.1} MB; written in {:.1} s, indexed in {:.1} s)",
            corpus.describe(),
            self.sessions,
            self.bytes as f64 / 1e6,
            self.write_secs,
            self.index_secs
        )
    }
}

/// The store's ranking for `text`, as `session-index search --all --json
/// --limit DEPTH` returns it: session ids, best first. A query the parser
/// refuses finds nothing.
pub fn lexical(store: &Store, text: &str) -> Vec<String> {
    let Ok(parsed) = Query::parse(text) else {
        return Vec::new();
    };
    let query = Query {
        limit: DEPTH,
        ..parsed
    };
    store
        .search(&query)
        .expect("search")
        .into_iter()
        .map(|hit| hit.session.id)
        .collect()
}

/// Where each query's target is in the ranking `rank` gives it.
pub fn ranks(
    name: &'static str,
    queries: &[DevQuery],
    mut rank: impl FnMut(&DevQuery) -> Vec<String>,
) -> Ranks {
    let ranks = queries
        .iter()
        .map(|q| rank(q).iter().position(|id| *id == q.target))
        .collect();
    Ranks {
        ranking: name,
        ranks,
    }
}

/// Checks that every target of the set is in the store.
pub fn assert_targets_indexed(store: &Store, queries: &[DevQuery]) {
    let ids: std::collections::HashSet<String> = store
        .records()
        .expect("the store's records")
        .into_iter()
        .map(|r| r.id)
        .collect();
    for q in queries {
        assert!(
            ids.contains(&q.target),
            "{}: target {} not indexed",
            q.id,
            q.target
        );
    }
}
