//! How many ranking rows hold each term, kept from one query to the next.
//!
//! A query's terms are counted before it is ranked (`rank.rs`: which terms
//! find the rows, which only score), each up to a quarter of the rows. The
//! common words ("the", "fix", "where") cost the most to count, a few ms at
//! 10,000 sessions, and they recur in most queries; the rare ones are cheap.
//! So a store answering many searches (pi's `/sessions`, `search_sessions`)
//! keeps the counts while the store is unchanged: no commit by another
//! connection (`PRAGMA data_version`) and no change by this one (its total
//! changes, taken again after each query, whose scratch rows for snippets
//! count as changes but are rolled back). A count is the same number the
//! query would count again, so no ranking changes.

use std::collections::HashMap;

use rusqlite::Connection;

use super::schema;

/// Terms kept at most (then the counts start again).
const MAX_TERMS: usize = 4_096;

/// The store's state the counts were made in: `PRAGMA data_version` and the
/// connection's total changes.
type Stamp = (i64, u64);

#[derive(Default)]
pub(super) struct KeptCounts {
    stamp: Option<Stamp>,
    /// Ranking rows in the store.
    rows: Option<i64>,
    /// Rows matching each `MATCH` expression, counted up to the limit given.
    matches: HashMap<(String, i64), i64>,
}

fn stamp(conn: &Connection) -> rusqlite::Result<Stamp> {
    let version = conn
        .prepare_cached(schema::DATA_VERSION)?
        .query_row([], |r| r.get(0))?;
    Ok((version, conn.total_changes()))
}

impl KeptCounts {
    /// At the start of a query: the counts are dropped if the store changed
    /// since the last query ended.
    pub fn begin(&mut self, conn: &Connection) -> rusqlite::Result<()> {
        let now = stamp(conn)?;
        if self.stamp != Some(now) {
            *self = KeptCounts {
                stamp: Some(now),
                ..KeptCounts::default()
            };
        }
        Ok(())
    }

    /// At the end of a query, which wrote only its rolled-back scratch rows:
    /// the counts hold for the store as it is now, unless another connection
    /// committed meanwhile (some may have been counted before, some after).
    pub fn end(&mut self, conn: &Connection) -> rusqlite::Result<()> {
        let now = stamp(conn)?;
        let unchanged = self.stamp.is_some_and(|(version, _)| version == now.0);
        self.stamp = unchanged.then_some(now);
        Ok(())
    }

    /// Ranking rows in the store.
    pub fn rows(&mut self, conn: &Connection) -> rusqlite::Result<i64> {
        if let Some(rows) = self.rows {
            return Ok(rows);
        }
        let rows = conn.query_row(schema::COUNT_RANKING_ROWS, [], |r| r.get(0))?;
        self.rows = Some(rows);
        Ok(rows)
    }

    /// Rows matching `expr`, counting no further than `limit`.
    pub fn matches(&mut self, conn: &Connection, expr: &str, limit: i64) -> rusqlite::Result<i64> {
        let key = (expr.to_string(), limit);
        if let Some(&n) = self.matches.get(&key) {
            return Ok(n);
        }
        let n = conn
            .prepare_cached(schema::COUNT_MATCHES)?
            .query_row(rusqlite::params![expr, limit], |r| r.get(0))?;
        if self.matches.len() == MAX_TERMS {
            self.matches.clear();
        }
        self.matches.insert(key, n);
        Ok(n)
    }
}
