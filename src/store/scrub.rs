//! Forgetting text in bounded steps: after sessions' rows are dropped (a
//! file deleted, rewritten with other text, or named by `privacy.exclude`),
//! their words stay in the full-text index's pages until every segment that
//! held them is written again. Rows deleted from a contentless table are only
//! marked (tombstones): queries skip them at once, but the bytes go only when
//! the segment holding them is merged. The segment holding old rows is
//! usually the one big segment of the whole index, so forgetting costs
//! writing the whole index again (57 s at 30,000 sessions under load, when it
//! ran as one `optimize` in one transaction, holding the write lock all
//! along: every other writer waited past its busy timeout).
//!
//! So the scrub is *owed*: the transaction that drops the rows records it in
//! the store (the `scrub` counter), and any later writer (the next command,
//! pi's refresh) pays it off in steps: FTS5 `merge` commands in write
//! transactions of at most [`STEP`], the write lock free between them. A
//! killed process leaves the debt recorded; the next one continues.
//!
//! The phases, kept in the `scrub` counter:
//! - [`Phase::Owed`]: rows were dropped. The next step starts a merge of
//!   every segment there is (`merge` with a negative page count puts them all
//!   on one level and merges them, tombstones applied, as `optimize` does),
//!   and records the origin horizon: every segment that may hold dropped
//!   rows has origins below it (FTS5 gives each new segment a larger
//!   origin; a merge's output spans its inputs'). If a merge of all
//!   segments but one was already under way, it may have copied rows before
//!   they were dropped: it is finished first, then a new one starts.
//! - [`Phase::Merging`]: steps continue that merge (`merge` with a positive
//!   count continues the merge under way, whatever other writers added
//!   meanwhile; only when it cannot, a negative one starts over with every
//!   segment). Done when at most one segment with origins below the horizon
//!   is left: the merge's output; every input is gone (an input stays
//!   listed, empty, until its merge is done). Dropping more rows meanwhile
//!   sets the phase back to owed.
//! - [`Phase::Cut`]: the merged-away pages were zeroed (`secure_delete`);
//!   the WAL is checkpointed and cut to nothing, so no frame keeps them. A
//!   reader still using the WAL keeps it: the next writer tries again.
//!
//! The guarantee. Dropped text is unfindable at once: its rows go in the
//! transaction that drops them. Its bytes leave every file of the store
//! when the owed scrub is done, and nothing else is needed for that than
//! later updates: each continues it for as long as its budget lasts (a
//! CLI command's 1 s, pi's background refresh; pi's update after an agent
//! run does one step), `session-index search --wait` finishes it, and the
//! CLI and `/session-index` say while it is owed. The work is one rewrite
//! of the full-text index (`search --wait` took 8-9 s at 10,000 sessions
//! under load 20, 22-23 s at 30,000 under load 5-8), more if dropping again
//! meanwhile sets it back to owed. No writer waits for it longer than one
//! step of at most [`STEP`] (a
//! `merge` command that starts before the step's end finishes; a common
//! word's postings are written whole), where one `optimize` of the whole
//! index kept another writer waiting 7.5 s at 10,000 sessions and 22 s at
//! 30,000 (0.24 s in steps). Not covered: a meta replaced (see `update.rs`'
//! `set_meta`).
//!
//! The FTS5 structure record (which segments there are, on which level,
//! their origins, which merge is under way) is read from the index's own
//! data table ([`Structure::read`]); its format is FTS5's on-disk format.

use std::time::{Duration, Instant};

use rusqlite::{Connection, OptionalExtension, TransactionBehavior};

use super::schema;
use super::{Store, StoreError};

/// The longest one scrub transaction holds the write lock: a writer that
/// waits for it waits about as long as for a write batch (update.rs' `BATCH`).
pub(super) const STEP: Duration = Duration::from_millis(200);
/// Leaf pages each `merge` command writes (a term's whole doclist is
/// written at once, so a command may write more).
const MERGE_PAGES: i64 = 32;
/// How long a step leaves the write lock free before the next. SQLite's
/// busy handler sleeps up to 100 ms between a waiting writer's tries, so a
/// pause of exactly 100 ms could fall between two of them (in a CI run, a
/// test's waiting writer got in only after the merge was done); half as
/// long again leaves each waiting writer at least one try inside the pause.
const PAUSE: Duration = Duration::from_millis(150);

/// How many times one command tries to cut the WAL ([`PAUSE`] apart).
const CUT_TRIES: usize = 10;

/// Where the scrub stands (the `scrub` counter; absent: nothing owed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Phase {
    Clean = 0,
    Owed = 1,
    Merging = 2,
    Cut = 3,
}

impl Phase {
    fn of(value: i64) -> Phase {
        match value {
            1 => Phase::Owed,
            2 => Phase::Merging,
            3 => Phase::Cut,
            _ => Phase::Clean,
        }
    }
}

/// The scrub's state as a command ends: whether dropped text is still in
/// the store's bytes (unfindable: its rows are gone).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ScrubState {
    /// Text dropped before is still in index pages or the WAL: a later
    /// command continues the scrub (`search --wait` finishes it).
    pub owed: bool,
    /// Leaf pages of the full-text index left to write again before it is
    /// not (an estimate; 0 when only the WAL is left to cut).
    pub pages_left: u64,
    /// Merge steps (write transactions of at most [`STEP`], [`PAUSE`]
    /// apart) this command made; 0 when it only read the state.
    pub merge_steps: u32,
}

impl ScrubState {
    /// One line for the user when a scrub is owed (the CLI's stderr, the
    /// `/session-index` overview), `None` when none is.
    pub fn describe(&self) -> Option<String> {
        self.owed.then(|| {
            let left = match self.pages_left {
                0 => "the WAL is left to cut".to_string(),
                pages => format!("about {pages} index pages are left to write again"),
            };
            format!(
                "Removed sessions' text is no longer found, but is still in the index's bytes \
                 ({left}); each update goes on removing it, `session-index search --wait` \
                 finishes it"
            )
        })
    }
}

/// Record, inside the transaction that drops rows whose text may be in no
/// file any more, that a scrub is owed.
pub(super) fn owe(tx: &Connection) -> rusqlite::Result<()> {
    set_counter(tx, "scrub", Phase::Owed as i64)
}

fn set_counter(conn: &Connection, name: &str, value: i64) -> rusqlite::Result<()> {
    conn.execute(schema::UPSERT_COUNTER, rusqlite::params![name, value])
        .map(|_| ())
}

/// A scrub is owed or under way (its merge of every segment included).
pub(super) fn owed(conn: &Connection) -> rusqlite::Result<bool> {
    Ok(Phase::of(counter(conn, "scrub")?) != Phase::Clean)
}

fn counter(conn: &Connection, name: &str) -> rusqlite::Result<i64> {
    Ok(conn
        .query_row(schema::COUNTER, [name], |r| r.get(0))
        .optional()?
        .unwrap_or(0))
}

impl Store {
    /// Whether a scrub is owed, and how much of it is left.
    pub fn scrub_state(&self) -> Result<ScrubState, StoreError> {
        let read = || -> rusqlite::Result<ScrubState> {
            let phase = Phase::of(counter(&self.conn, "scrub")?);
            let pages_left = match phase {
                Phase::Clean | Phase::Cut => 0,
                Phase::Owed => Structure::read(&self.conn)?.pages(),
                Phase::Merging => {
                    let horizon = counter(&self.conn, "scrub_horizon")?;
                    Structure::read(&self.conn)?.pages_below(horizon)
                }
            };
            Ok(ScrubState {
                owed: phase != Phase::Clean,
                pages_left,
                merge_steps: 0,
            })
        };
        read().map_err(|e| self.sql(e))
    }

    /// Continue an owed scrub in steps of at most [`STEP`] until it is done
    /// or `deadline` passed (`None`: until done); at least one step when one
    /// is owed. Where it stands after.
    pub(super) fn scrub_until(
        &mut self,
        deadline: Option<Instant>,
    ) -> Result<ScrubState, StoreError> {
        let mut phase = Phase::of(counter(&self.conn, "scrub").map_err(|e| self.sql(e))?);
        let mut first = true;
        let mut cuts_failed = 0;
        let mut merge_steps = 0;
        while phase != Phase::Clean {
            if !first {
                if super::past(deadline) {
                    break;
                }
                // The write lock free for a while: a waiting writer gets in.
                std::thread::sleep(PAUSE);
            }
            first = false;
            phase = match phase {
                Phase::Cut => match self.cut_wal() {
                    Some(phase) => phase,
                    // A reader keeps the WAL (or a writer, for 50 ms): tried
                    // again a few times, then by the next command.
                    None if cuts_failed < CUT_TRIES => {
                        cuts_failed += 1;
                        Phase::Cut
                    }
                    None => break,
                },
                _ => {
                    merge_steps += 1;
                    self.merge_step().map_err(|e| self.sql(e))?
                }
            };
        }
        Ok(ScrubState {
            merge_steps,
            ..self.scrub_state()?
        })
    }

    /// One write transaction of merge work, at most [`STEP`] long. The phase after it.
    fn merge_step(&mut self) -> rusqlite::Result<Phase> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let began = Instant::now();
        let mut phase = Phase::of(counter(&tx, "scrub")?);
        while began.elapsed() < STEP {
            let before = Structure::read(&tx)?;
            match phase {
                Phase::Owed => {
                    let under_way = before.merging_all_but_one();
                    if !under_way {
                        // Every segment below this horizon is an input of the merge begun now.
                        set_counter(&tx, "scrub_horizon", before.next_origin())?;
                    }
                    tx.execute(schema::MERGE, [-MERGE_PAGES])?;
                    if !under_way {
                        phase = Phase::Merging;
                        set_counter(&tx, "scrub", phase as i64)?;
                    }
                }
                Phase::Merging => {
                    let horizon = counter(&tx, "scrub_horizon")?;
                    if before.segments_below(horizon) <= 1 {
                        phase = Phase::Cut;
                        set_counter(&tx, "scrub", phase as i64)?;
                        break;
                    }
                    tx.execute(schema::MERGE, [MERGE_PAGES])?;
                    if Structure::read(&tx)? == before {
                        // Another level comes first for a positive merge: start over with all.
                        tx.execute(schema::MERGE, [-MERGE_PAGES])?;
                    }
                }
                Phase::Clean | Phase::Cut => break,
            }
        }
        tx.commit()?;
        Ok(phase)
    }

    /// Copy the WAL into the file and cut it to nothing (the frames that
    /// held dropped text go), without waiting for readers: the phase after
    /// it, `None` when a reader kept it. A checkpoint that takes no write
    /// lock copies first: the one that cuts holds the lock while it copies
    /// what is left.
    fn cut_wal(&mut self) -> Option<Phase> {
        let _ = self.conn.busy_timeout(Duration::from_millis(50));
        let _ = self
            .conn
            .query_row(schema::PASSIVE_CHECKPOINT, [], |_| Ok(()));
        // Its first column, busy, is 0 when every frame was copied and the WAL cut.
        let cut = self
            .conn
            .query_row(schema::TRUNCATE_WAL, [], |r| r.get::<_, i64>(0));
        let _ = self.conn.busy_timeout(Duration::from_secs(10));
        if !matches!(cut, Ok(0)) {
            tracing::debug!(
                "search index {}: WAL not cut yet: {cut:?}",
                self.path.display()
            );
            return None;
        }
        // Only a scrub still at its cut is cleared: rows dropped meanwhile owe a new one.
        let clear = |conn: &Connection| -> rusqlite::Result<Phase> {
            conn.execute(schema::CLEAR_CUT_SCRUB, [])?;
            Ok(Phase::of(counter(conn, "scrub")?))
        };
        clear(&self.conn).ok()
    }
}

/// What the scrub (and `merge.rs`) reads of FTS5's structure record: its
/// segments by level.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Structure {
    levels: Vec<Level>,
}

#[derive(Debug, PartialEq, Eq)]
struct Level {
    /// How many of its first segments are inputs of a merge under way
    /// (its output is the last segment of the next level).
    merging: usize,
    segments: Vec<Segment>,
}

#[derive(Debug, PartialEq, Eq)]
struct Segment {
    first_page: u64,
    last_page: u64,
    /// The origins of the rows it holds (FTS5 counts them up as segments are written).
    origin_last: u64,
}

impl Structure {
    /// The structure record of the `docs` index.
    pub(super) fn read(conn: &Connection) -> rusqlite::Result<Structure> {
        let record: Option<Vec<u8>> = conn
            .query_row(schema::FTS_STRUCTURE, [], |r| r.get(0))
            .optional()?;
        let Some(record) = record else {
            return Ok(Structure::default());
        };
        Structure::decode(&record).ok_or_else(|| {
            rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CORRUPT),
                Some("full-text index structure record unreadable".into()),
            )
        })
    }

    /// FTS5's format (`fts5StructureDecode`): a 4-byte cookie, the V2 mark,
    /// then varints: levels, segments, write counter; per level: segments
    /// under merge, segments; per segment: id, first and last page, first
    /// and last origin, tombstone pages, tombstones, entries.
    fn decode(record: &[u8]) -> Option<Structure> {
        const V2: [u8; 4] = [0xff, 0x00, 0x00, 0x01];
        let mut at = 4;
        if record.get(4..8)? != V2 {
            // Only contentless_delete tables, which write V2, are scrubbed.
            return None;
        }
        at += 4;
        let mut next = || {
            let (value, len) = varint(record.get(at..)?)?;
            at += len;
            Some(value)
        };
        let levels = next()?;
        let _segments = next()?;
        let _writes = next()?;
        let mut structure = Structure::default();
        for _ in 0..levels {
            let merging = next()? as usize;
            let count = next()?;
            let mut segments = Vec::new();
            for _ in 0..count {
                let _id = next()?;
                let first_page = next()?;
                let last_page = next()?;
                let _origin_first = next()?;
                let origin_last = next()?;
                let _tombstone_pages = next()?;
                let _tombstones = next()?;
                let _entries = next()?;
                segments.push(Segment {
                    first_page,
                    last_page,
                    origin_last,
                });
            }
            structure.levels.push(Level { merging, segments });
        }
        Some(structure)
    }

    /// The most segments one level holds.
    pub(super) fn fullest_level(&self) -> usize {
        self.levels
            .iter()
            .map(|l| l.segments.len())
            .max()
            .unwrap_or(0)
    }

    fn segments(&self) -> impl Iterator<Item = &Segment> {
        self.levels.iter().flat_map(|l| &l.segments)
    }

    /// A merge of every segment but one (its output) is under way: a
    /// negative `merge` continues it rather than starting one of all.
    fn merging_all_but_one(&self) -> bool {
        let total = self.segments().count();
        self.levels
            .iter()
            .any(|l| l.merging > 0 && l.merging == l.segments.len() && l.merging + 1 == total)
    }

    /// Larger than every segment's origins: segments written later have these or larger.
    fn next_origin(&self) -> i64 {
        self.segments()
            .map(|s| s.origin_last + 1)
            .max()
            .unwrap_or(0) as i64
    }

    fn segments_below(&self, horizon: i64) -> usize {
        self.segments()
            .filter(|s| (s.origin_last as i64) < horizon)
            .count()
    }

    fn pages(&self) -> u64 {
        self.segments().map(Segment::pages).sum()
    }

    fn pages_below(&self, horizon: i64) -> u64 {
        self.segments()
            .filter(|s| (s.origin_last as i64) < horizon)
            .map(Segment::pages)
            .sum()
    }
}

impl Segment {
    /// Leaf pages it holds (0: emptied by the merge it is an input of).
    fn pages(&self) -> u64 {
        if self.first_page == 0 {
            0
        } else {
            self.last_page.saturating_sub(self.first_page) + 1
        }
    }
}

/// SQLite's varint (FTS5 uses it too): big-endian groups of 7 bits, the high
/// bit set on all but the last; the ninth byte gives 8 bits. The value and
/// its length.
fn varint(bytes: &[u8]) -> Option<(u64, usize)> {
    let mut value = 0u64;
    for (i, &byte) in bytes.iter().enumerate().take(9) {
        if i == 8 {
            return Some(((value << 8) | u64::from(byte), 9));
        }
        value = (value << 7) | u64::from(byte & 0x7f);
        if byte & 0x80 == 0 {
            return Some((value, i + 1));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_read_as_sqlite_writes_them() {
        assert_eq!(varint(&[0x05]), Some((5, 1)));
        assert_eq!(varint(&[0x81, 0x00]), Some((128, 2)));
        assert_eq!(varint(&[0xff; 9]), Some((u64::MAX, 9)));
        assert_eq!(varint(&[0x81]), None);
    }
}
