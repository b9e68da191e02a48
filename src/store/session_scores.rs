//! A session's lexical score from its ranking rows' scores: its best row
//! plus [`OTHER_ROWS`] of the others (`rank.rs`).
//!
//! The ranking query used to add the rows up in SQL (`GROUP BY` the row,
//! then the session, `max()` and `sum()`), then join every session found to
//! `sessions` for the current project's boost and sort them all: on the
//! search bench (10,000 sessions) a word in 3,725 rows made 2,840 sessions,
//! three temporary b-trees and 2,840 index lookups for 10 shown. The rows
//! come in rowid order and a session's rows are consecutive (rowids
//! `sid * SPAN ..`), so they are added up here as they come, and only the
//! sessions that can still take a place are looked up (135-193 on the
//! bench's slowest queries; see [`Candidates::within_reach`]). The scores are the same numbers, to
//! the bit: `sum()` is SQLite's (Kahan-Babuska-Neumaier, [`Sum`]), `max()`
//! keeps the first row of the best score, and the score is computed in the
//! same order of operations.

use super::schema::SPAN;

/// A session's rows other than its best one count this much.
pub(super) const OTHER_ROWS: f64 = 0.5;

/// One session found by the ranking rows.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Candidate {
    pub sid: i64,
    /// Its best row (the first of them, on a tie).
    pub best: i64,
    /// `top + OTHER_ROWS * (total - top)`, before the current project's boost.
    pub score: f64,
}

/// SQLite's `sum()` of doubles (`sumStep`, `kahanBabuskaNeumaierStep` and
/// `sumFinalize` in sqlite3.c): the running sum and its rounding error.
#[derive(Debug, Clone, Copy, Default)]
struct Sum {
    sum: f64,
    err: f64,
}

impl Sum {
    fn add(&mut self, r: f64) {
        let t = self.sum + r;
        if self.sum.abs() > r.abs() {
            self.err += (self.sum - t) + r;
        } else {
            self.err += (r - t) + self.sum;
        }
        self.sum = t;
    }

    fn total(self) -> f64 {
        if self.err.is_finite() {
            self.sum + self.err
        } else {
            self.sum
        }
    }
}

/// The session being added up.
struct Open {
    sid: i64,
    best: i64,
    top: f64,
    total: Sum,
}

impl Open {
    fn new(rowid: i64, r: f64) -> Open {
        let mut total = Sum::default();
        total.add(r);
        Open {
            sid: rowid / SPAN,
            best: rowid,
            top: r,
            total,
        }
    }

    fn close(self) -> Candidate {
        let (top, total) = (self.top, self.total.total());
        Candidate {
            sid: self.sid,
            best: self.best,
            score: top + OTHER_ROWS * (total - top),
        }
    }
}

/// The sessions of the ranking rows, best first.
#[derive(Debug, Default)]
pub(super) struct Candidates {
    sessions: Vec<Candidate>,
}

impl Candidates {
    /// Rows `(rowid, score)` in rowid order, added up by session.
    pub fn from_rows(
        rows: impl IntoIterator<Item = rusqlite::Result<(i64, f64)>>,
    ) -> rusqlite::Result<Candidates> {
        let mut sessions = Vec::new();
        let mut open: Option<Open> = None;
        for row in rows {
            let (rowid, r) = row?;
            match open.as_mut() {
                Some(o) if o.sid == rowid / SPAN => {
                    if r > o.top {
                        (o.top, o.best) = (r, rowid);
                    }
                    o.total.add(r);
                }
                _ => sessions.extend(open.replace(Open::new(rowid, r)).map(Open::close)),
            }
        }
        sessions.extend(open.map(Open::close));
        // Stable: equal scores keep the sessions' order.
        sessions.sort_by(|a, b| b.score.total_cmp(&a.score));
        Ok(Candidates { sessions })
    }

    pub fn len(&self) -> usize {
        self.sessions.len()
    }

    /// The candidates from `from` on to look at next: at least `at_least`,
    /// and all whose score times `boost` (the most a session's score is
    /// multiplied by) reaches `bar`, the score the last place has to beat
    /// (or equal: ties go by time). The candidates are best first: the rest
    /// cannot reach it.
    pub fn within_reach(&self, from: usize, at_least: usize, boost: f64, bar: f64) -> &[Candidate] {
        let rest = &self.sessions[from.min(self.sessions.len())..];
        let reach = rest.partition_point(|c| c.score * boost >= bar);
        &rest[..reach.max(at_least.min(rest.len()))]
    }

    /// The `n`th best score (1-based), if there are that many.
    pub fn nth_score(&self, n: usize) -> Option<f64> {
        n.checked_sub(1)
            .and_then(|i| self.sessions.get(i))
            .map(|c| c.score)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rows of three sessions, the best row of one tied.
    fn rows() -> Vec<rusqlite::Result<(i64, f64)>> {
        let (a, b, c) = (3 * SPAN, 5 * SPAN, 9 * SPAN);
        [
            (a, 1.0),
            (a + 7, 4.0),
            (a + 9, 4.0),
            (b, 0.1),
            (c + 2, 2.5),
            (c + 3, 1.0e-17),
        ]
        .into_iter()
        .map(Ok)
        .collect()
    }

    #[test]
    fn sessions_add_up_their_rows_best_first() {
        let found = Candidates::from_rows(rows()).unwrap();
        let sids: Vec<i64> = found.sessions.iter().map(|c| c.sid).collect();
        assert_eq!(sids, [3, 9, 5]);
        // The first of the tied best rows; the others count half.
        assert_eq!(found.sessions[0].best, 3 * SPAN + 7);
        assert_eq!(found.sessions[0].score, 4.0 + 0.5 * 5.0);
        assert_eq!(found.nth_score(3), Some(0.1));
        assert_eq!(found.nth_score(4), None);
        assert_eq!(found.nth_score(0), None);
    }

    /// The sum is SQLite's, not a plain one: checked against SQLite itself.
    #[test]
    fn sums_are_sqlites() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        let values = [1.0e16, 1.0, -1.0e16, 3.3, 0.1, 0.2, 1.0e-17, 7.0e15, 2.5];
        let mut sum = Sum::default();
        values.iter().for_each(|&v| sum.add(v));
        let json = serde_json::to_string(&values).unwrap();
        let sqlite: f64 = conn
            .query_row("SELECT sum(value) FROM json_each(?1)", [&json], |r| {
                r.get(0)
            })
            .unwrap();
        let plain: f64 = values.iter().sum();
        assert_eq!(sum.total().to_bits(), sqlite.to_bits());
        assert_ne!(plain.to_bits(), sqlite.to_bits());
    }

    #[test]
    fn only_candidates_within_reach_are_looked_at() {
        let found = Candidates::from_rows(rows()).unwrap();
        // Scores 6.5, 2.5, 0.1.
        assert_eq!(found.within_reach(0, 0, 1.0, 2.5).len(), 2);
        assert_eq!(found.within_reach(0, 0, 1.5, 6.5).len(), 1);
        assert_eq!(found.within_reach(1, 0, 1.5, 3.75).len(), 1);
        assert_eq!(found.within_reach(1, 0, 1.5, 3.76).len(), 0);
        assert_eq!(found.within_reach(1, 2, 1.5, 3.76).len(), 2);
        assert_eq!(found.within_reach(1, 5, 1.5, 3.76).len(), 2);
        assert_eq!(found.within_reach(9, 1, 1.5, 0.0).len(), 0);
    }
}
