//! Building an evaluation corpus and running the queries through the
//! store's rankings: its search (the function `session-index search --json`
//! calls, with its defaults: every project, none ranked first) without the
//! model (lexical), with the model after its own embedding job embedded
//! every passage (fused: what users get), and the dense half of that fusion
//! alone ([`Store::search_dense`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use session_index::store::{EmbedReport, F32Vectors, Query, SessionHit, Store, StoreError};

use super::dev_set::DevQuery;
use super::report::Ranks;
use crate::support::corpus::{copy_targets, Distractors};

/// Sessions each ranking returns per query in the report: where a missed
/// target came (`SEARCH_EVAL_MISSES=1` prints "#23").
pub const REPORT_DEPTH: usize = 50;

/// Sessions each ranking returns per query for a floor: the table's top-10.
/// The fusion takes its own candidates from each side whatever the limit
/// (`FUSED_DEPTH` in the store), so the top 10 are those of a deeper
/// search; only fewer sessions get their snippets (most of a lexical
/// query's cost in a debug build).
pub const FLOOR_DEPTH: usize = 10;

/// The store's rankings an evaluation runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ranking {
    /// The store's search without the model.
    Lexical,
    /// The dense half of the fusion alone ([`Store::search_dense`]).
    Dense,
    /// The store's search with the model: what every surface shows.
    Fused,
}

impl Ranking {
    /// The table's columns, in its order.
    pub const ALL: [Ranking; 3] = [Ranking::Lexical, Ranking::Dense, Ranking::Fused];

    pub fn name(self) -> &'static str {
        match self {
            Ranking::Lexical => "lexical",
            Ranking::Dense => "dense",
            Ranking::Fused => "fused",
        }
    }

    /// The store that ranks and the search it ranks by (`None`: a ranking
    /// with the model on a corpus built without it).
    fn search(self, built: &Built) -> Option<(&Store, Search)> {
        match self {
            Ranking::Lexical => Some((&built.lexical, Store::search)),
            Ranking::Dense => Some((built.semantic.as_ref()?, Store::search_dense)),
            Ranking::Fused => Some((built.semantic.as_ref()?, Store::search)),
        }
    }
}

/// `Store::search` or `Store::search_dense`.
type Search = fn(&Store, &Query) -> Result<Vec<SessionHit>, StoreError>;

/// What surrounds the targets.
#[derive(Debug, Clone, Copy)]
pub struct Corpus {
    pub distractors: Distractors,
    pub count: usize,
}

/// A corpus written and indexed in a temporary agent directory.
pub struct Built {
    _dir: tempfile::TempDir,
    /// Ranks without the model.
    pub lexical: Store,
    /// Ranks with the model, every passage embedded (when a model was given).
    pub semantic: Option<Store>,
    pub embedded: Option<Embedded>,
    /// The passages' f32 vectors, when asked for ([`Corpus::build_keeping_f32`]).
    pub f32: Option<Arc<F32Vectors>>,
    pub sessions: usize,
    pub bytes: u64,
    pub write_secs: f64,
    pub index_secs: f64,
}

/// What the store's embedding job did on a corpus.
pub struct Embedded {
    pub report: EmbedReport,
    pub threads: usize,
    pub secs: f64,
    /// CPU time of this process while it ran (all threads).
    pub cpu_secs: f64,
}

impl Corpus {
    pub fn describe(&self) -> String {
        format!("{} {} distractors", self.count, self.distractors.name())
    }

    /// Writes the targets and the distractors, and builds the store from
    /// them, in a temporary directory, or under `$SEARCH_EVAL_KEEP/<corpus>`
    /// (kept, to look at or to search with the CLI's `--agent-dir`). With
    /// `SEARCH_EVAL_REUSE=1` a corpus kept there is ranked again as it is
    /// (nothing written, nothing left to embed): a fusion change measured in
    /// seconds instead of an embedding run. With `model`, the store's
    /// embedding job then embeds every pending passage.
    pub fn build(&self, model: Option<&Path>) -> Built {
        self.build_with(model, false)
    }

    /// As [`Corpus::build`] with the model, keeping every passage's f32
    /// vector too, as the encoder gave it before the store quantized it.
    pub fn build_keeping_f32(&self, model: &Path) -> Built {
        self.build_with(Some(model), true)
    }

    fn build_with(&self, model: Option<&Path>, keep_f32: bool) -> Built {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let reuse = std::env::var_os("SEARCH_EVAL_REUSE").is_some();
        let (agent, kept) = match std::env::var_os("SEARCH_EVAL_KEEP") {
            Some(keep) => {
                let agent =
                    PathBuf::from(keep).join(format!("{}-{}", self.distractors.name(), self.count));
                let kept = reuse && agent.join("sessions").is_dir();
                if !kept {
                    let _ = std::fs::remove_dir_all(&agent);
                }
                (agent, kept)
            }
            None => (dir.path().to_path_buf(), false),
        };
        let started = Instant::now();
        if !kept {
            let targets = copy_targets(&agent);
            assert!(targets >= 32, "the targets: {targets} files");
            self.distractors.write(&agent, self.count);
        }
        let write_secs = started.elapsed().as_secs_f64();
        let started = Instant::now();
        let mut store = Store::open(&agent)
            .expect("open the store")
            .with_model(None);
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
        let (semantic, embedded, f32) = match model {
            Some(model) => {
                let (store, embedded, f32) = embed_all(&agent, model, keep_f32);
                (Some(store), Some(embedded), f32)
            }
            None => (None, None, None),
        };
        Built {
            _dir: dir,
            lexical: store,
            semantic,
            embedded,
            f32,
            sessions: report.files,
            bytes,
            write_secs,
            index_secs,
        }
    }
}

/// The store of `agent` ranking with the model in `model`, after its
/// embedding job (on every core) embedded every pending passage (keeping
/// their f32 vectors too with `keep_f32`).
fn embed_all(
    agent: &Path,
    model: &Path,
    keep_f32: bool,
) -> (Store, Embedded, Option<Arc<F32Vectors>>) {
    let mut store = Store::open(agent)
        .expect("open the store")
        .with_model(Some(model.to_path_buf()));
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let encoder = store.encoder(threads).expect("the model loads");
    let (started, cpu) = (Instant::now(), cpu_secs());
    let (report, f32) = if keep_f32 {
        let (report, f32) = store
            .embed_pending_keeping_f32(&encoder)
            .expect("embed the passages");
        (report, Some(Arc::new(f32)))
    } else {
        let report = store
            .embed_pending(&encoder, None, &mut |_| {})
            .expect("embed the passages");
        (report, None)
    };
    let embedded = Embedded {
        report,
        threads,
        secs: started.elapsed().as_secs_f64(),
        cpu_secs: cpu_secs() - cpu,
    };
    assert_eq!(report.pending, 0, "every passage embedded");
    (store, embedded, f32)
}

/// This process's CPU time (user + system, all threads), in seconds.
fn cpu_secs() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // The fields after the command's closing parenthesis: utime is the 12th, stime the 13th.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (ticks(11) + ticks(12)) / 100.0
}

impl Built {
    pub fn describe(&self, corpus: &Corpus) -> String {
        let mut out = format!(
            "{} ({} sessions, {:.1} MB; written in {:.1} s, indexed in {:.1} s)",
            corpus.describe(),
            self.sessions,
            self.bytes as f64 / 1e6,
            self.write_secs,
            self.index_secs
        );
        if let Some(e) = &self.embedded {
            out.push_str(&format!(
                "\n  embedded by the store's job: {} passages of {} rows in {:.1} s on {} threads, \
                 {:.1} CPU-s ({:.1} passages/s, {:.1} passages per CPU-s)",
                e.report.passages,
                e.report.rows,
                e.secs,
                e.threads,
                e.cpu_secs,
                e.report.passages as f64 / e.secs.max(1e-3),
                e.report.passages as f64 / e.cpu_secs.max(1e-3),
            ));
        }
        out
    }
}

/// A store's ranking for `text` by `search` (`Store::search` as
/// `session-index search --all --json --limit <depth>` calls it, or
/// `Store::search_dense`): at most `depth` session ids, best first. A query
/// the parser refuses finds nothing.
fn ranking(store: &Store, search: Search, text: &str, depth: usize) -> Vec<String> {
    let Ok(parsed) = Query::parse(text) else {
        return Vec::new();
    };
    let query = Query {
        limit: depth,
        ..parsed
    };
    search(store, &query)
        .expect("search")
        .into_iter()
        .map(|hit| hit.session.id)
        .collect()
}

/// Where each query's target is in `ranking` of `built`, searched `depth`
/// deep (`None`: a ranking with the model on a corpus built without it).
pub fn ranks(ranking: Ranking, built: &Built, queries: &[DevQuery], depth: usize) -> Option<Ranks> {
    let (store, search) = ranking.search(built)?;
    let ranks = queries
        .iter()
        .map(|q| {
            self::ranking(store, search, &q.query, depth)
                .iter()
                .position(|id| *id == q.target)
        })
        .collect();
    Some(Ranks {
        ranking: ranking.name(),
        ranks,
    })
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
