//! Tallies and the printed table: top-1 / top-3 / top-10 per ranking, per
//! half and per kind of query. The tune half's tables (and, on request, its
//! misses query by query) come first; the holdout half's come last and only
//! as counts, so nobody reads a holdout query's result while choosing.

use std::fmt::Write;

use super::dev_set::{DevQuery, Half};

/// The kinds of query, in the README's order.
const KINDS: &[&str] = &[
    "mid-session",
    "paraphrase",
    "keyword",
    "error",
    "near-twin",
    "file",
    "other",
];

/// Where each query's target came in one ranking (0 = first; `None`: not
/// among the sessions it returned).
pub struct Ranks {
    pub ranking: &'static str,
    pub ranks: Vec<Option<usize>>,
}

/// How many queries found their target in the top 1, 3 and 10.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Tally {
    pub queries: usize,
    pub top1: usize,
    pub top3: usize,
    pub top10: usize,
}

impl Tally {
    fn add(&mut self, rank: Option<usize>) {
        self.queries += 1;
        self.top1 += usize::from(rank.is_some_and(|r| r < 1));
        self.top3 += usize::from(rank.is_some_and(|r| r < 3));
        self.top10 += usize::from(rank.is_some_and(|r| r < 10));
    }

    pub fn top3_share(&self) -> f64 {
        self.top3 as f64 / self.queries.max(1) as f64
    }
}

/// A row of the table: which queries of a half it counts.
#[derive(Debug, Clone, Copy)]
pub enum Row {
    All,
    Kind(&'static str),
    /// A: over the shared sessions; B: over the development set's own.
    Author(&'static str),
}

impl Row {
    fn holds(self, query: &DevQuery) -> bool {
        match self {
            Row::All => true,
            Row::Kind(kind) => query.kind == kind,
            Row::Author(author) => query.author == author,
        }
    }

    fn label(self) -> String {
        match self {
            Row::All => "all".into(),
            Row::Kind(kind) => kind.into(),
            Row::Author(author) => format!("author {author}"),
        }
    }

    /// All, each kind, each author.
    fn every() -> impl Iterator<Item = Row> {
        std::iter::once(Row::All)
            .chain(KINDS.iter().map(|k| Row::Kind(k)))
            .chain(["A", "B"].map(Row::Author))
    }
}

/// The tally of the queries of `half` in `row` in `ranks`.
pub fn tally(queries: &[DevQuery], ranks: &Ranks, half: Half, row: Row) -> Tally {
    let mut tally = Tally::default();
    for (query, rank) in queries.iter().zip(&ranks.ranks) {
        if query.half == half && row.holds(query) {
            tally.add(*rank);
        }
    }
    tally
}

/// One half's table: a row for all, per kind and per author, a column group per ranking.
pub fn table(title: &str, queries: &[DevQuery], rankings: &[Ranks], half: Half) -> String {
    let mut out = String::new();
    let count = queries.iter().filter(|q| q.half == half).count();
    let _ = writeln!(out, "{title}: {} half, {count} queries", half.name());
    let _ = write!(out, "  {:<12} {:>3}", "kind", "n");
    for ranks in rankings {
        let _ = write!(out, "  | {:<15}", ranks.ranking);
    }
    let _ = writeln!(out);
    let _ = write!(out, "  {:<12} {:>3}", "", "");
    for _ in rankings {
        let _ = write!(out, "  | {:>4} {:>4} {:>5}", "@1", "@3", "@10");
    }
    let _ = writeln!(out);
    for row in Row::every() {
        let n = queries
            .iter()
            .filter(|q| q.half == half && row.holds(q))
            .count();
        if n == 0 {
            continue;
        }
        let _ = write!(out, "  {:<12} {n:>3}", row.label());
        for ranks in rankings {
            let t = tally(queries, ranks, half, row);
            let _ = write!(out, "  | {:>4} {:>4} {:>5}", t.top1, t.top3, t.top10);
        }
        let _ = writeln!(out);
    }
    let _ = write!(out, "  {:<16}", "top-3 share");
    for ranks in rankings {
        let share = tally(queries, ranks, half, Row::All).top3_share();
        let _ = write!(out, "  | {:>15}", format!("{:.1}%", share * 100.0));
    }
    let _ = writeln!(out);
    out
}

/// The tune half's queries whose target is not in a ranking's top 3: the
/// query, its kind and where the target came. Never called for the holdout half.
pub fn tune_misses(queries: &[DevQuery], ranks: &Ranks) -> String {
    let mut out = format!(
        "{} misses (tune half, target not in the top 3):\n",
        ranks.ranking
    );
    for (query, rank) in queries.iter().zip(&ranks.ranks) {
        if query.half == Half::Tune && !rank.is_some_and(|r| r < 3) {
            let at = rank.map_or("not found".to_string(), |r| format!("#{}", r + 1));
            let _ = writeln!(
                out,
                "  {} {:<11} {:>9}  {:?}",
                query.id, query.kind, at, query.query
            );
        }
    }
    out
}
