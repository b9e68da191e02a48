//! Keeping the full-text index's segments few, in write transactions of
//! their own, each as short as a write batch.
//!
//! FTS5 keeps the terms a transaction adds in memory and writes them as a
//! new segment on level 0 when it commits (and whenever they pass its
//! `hashsize`, 8 MB in the store, mid-transaction). A query reads every segment, so
//! segments are merged: the segments of one level into one of the next.
//! FTS5 merges inside those flushes: `automerge` (off in the schema) and
//! the *crisis merge*: a level 0 that holds `crisismerge` segments (16 by
//! default) is merged whole into level 1 at once, then level 1 if that
//! made it 16, and so on. That work, and the `merge` command each write
//! transaction ran before its commit, were inside the write transaction,
//! past the clock that bounds it (`update.rs`' `BATCH`, checked after each
//! file): during the first build of the 10,000-session bench corpus, write
//! transactions held the write lock p99 981-1004 ms, max 1033-1054 ms
//! (load 5-6; up to 5.9 s at load 4-25, a WAL checkpoint counted), and every other
//! writer (pi's refresh, a search's freshness pass, the semantic backfill)
//! waited on its busy timeout as long.
//!
//! So writes do not merge: `crisismerge` is 64 in the store
//! (`schema::ADDITIONS`; a level 0 that full is still merged whole inside
//! the flush: a safety net for passes that keep ending at their deadline),
//! and after each write transaction [`merge_due`] merges in transactions
//! of its own: `merge` commands of [`MERGE_PAGES`] leaf pages while a level
//! holds [`MERGE_AT`] segments (FTS5 takes the level with the most
//! segments, or continues the merge under way), a transaction committing
//! once it has been open `BATCH` long. Write and merge transactions then
//! held the lock p99 295-301 ms, max 297-328 ms, in the same build (both
//! counted without the WAL checkpoints, which run after the lock is free:
//! see `BATCH`). The
//! index ends with no level of 16 segments, as the crisis merge left it
//! (query times as before), for about the same merge work.
//!
//! What the bound leaves out: a `merge` command that starts before it
//! finishes, and writes a term's whole doclist at once (the commonest
//! words' postings on the largest levels); a write transaction's last
//! file, written whole (a session of 100 MB is one file), and its commit,
//! which writes the terms still pending (at most `hashsize`) as a segment;
//! the WAL checkpoint a pass's commit runs once the WAL is past
//! `update.rs`' `PASS_CHECKPOINT_PAGES` (after the lock is released: other
//! writers go on).
//!
//! While a scrub is owed or under way (`scrub.rs`) nothing is merged here:
//! the scrub's merge writes every segment again anyway, and a positive
//! `merge` would continue it, to its end, outside the scrub's budget.

use std::time::{Duration, Instant};

use rusqlite::{Connection, TransactionBehavior};

use super::schema;
use super::scrub::{self, Structure};

/// Segments on one level at which it is merged into the next: FTS5's
/// default `crisismerge`, which kept the first build's index at 3-4 levels
/// of up to 15 segments (query times as before).
const MERGE_AT: usize = 16;
/// Leaf pages each `merge` command writes (more when a term's doclist is longer).
const MERGE_PAGES: i64 = 64;

/// Merge while a level holds [`MERGE_AT`] segments, in write transactions
/// that commit once open `bound` long, until none does or `deadline` passed:
/// at least one transaction when one is due (a pass that always ends at its
/// deadline still merges), none while a scrub is owed.
pub(super) fn merge_due(
    conn: &mut Connection,
    bound: Duration,
    deadline: Option<Instant>,
) -> rusqlite::Result<()> {
    let mut first = true;
    while due(conn)? {
        if !first && super::past(deadline) {
            break;
        }
        first = false;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let began = Instant::now();
        let mut stuck = false;
        // The scrub counter cannot change under this transaction's lock: only
        // the structure is read again, once per merge command.
        let mut structure = Structure::read(&tx)?;
        while began.elapsed() < bound && structure.fullest_level() >= MERGE_AT {
            tx.execute(schema::MERGE, [MERGE_PAGES])?;
            let after = Structure::read(&tx)?;
            // FTS5 found nothing to merge at its own threshold (`usermerge`).
            stuck = after == structure;
            if stuck {
                break;
            }
            structure = after;
        }
        tx.commit()?;
        held(began);
        if stuck {
            break;
        }
    }
    Ok(())
}

/// A level holds [`MERGE_AT`] segments, and no scrub is owed.
fn due(conn: &Connection) -> rusqlite::Result<bool> {
    if scrub::owed(conn)? {
        return Ok(false);
    }
    Ok(Structure::read(conn)?.fullest_level() >= MERGE_AT)
}

/// The target of the trace event that ends each write transaction of an
/// update, with `held_us`: from when it took the write lock to when its
/// commit returned, a WAL checkpoint the commit ran after releasing the
/// lock included (the search bench's build prints their p50/p99/max).
pub const HOLD_TARGET: &str = "session_index::store::hold";

/// Trace how long the write transaction that took the lock at `began` held it.
pub(super) fn held(began: Instant) {
    let held_us = u64::try_from(began.elapsed().as_micros()).unwrap_or(u64::MAX);
    tracing::trace!(target: HOLD_TARGET, held_us);
}
