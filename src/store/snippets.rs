//! Snippets of the sessions a query shows, cut from their text read again
//! from the session files: the store keeps the words only in its full-text
//! index (which cannot give them back), and where each entry's line starts.
//! The few entries of each shown session's best ranking row are read at
//! those offsets, checked to be the entries stored there (a file rewritten
//! since the last update gives no snippet, not a wrong one), redacted by the
//! reader as the update's were, and put in a scratch full-text table of the
//! connection, where FTS5's `snippet()` marks the query's words.
//!
//! The scratch rows of all the shown sessions are written by one statement
//! inside a savepoint that is always rolled back ([`Scratch`]): FTS5 keeps
//! them in its in-memory pending terms, which its queries read, and the
//! rollback discards them. Written row by row in autocommit, as before, each
//! row was flushed to a segment of its own, the segments merged, and the
//! rows deleted again (which tokenizes their text a second time): 1-5 ms of
//! a shown session's snippet, most of a slow query.
//!
//! Only the entries a snippet can come from are read and written
//! ([`ChunkPicker`]). The snippets of a session are the first two rows (in
//! file order) that the first expression finds, then those the next finds,
//! and so on (see [`Store::cut`]); so the entries are read in file order
//! and the reading stops once the rows read settle which those are. An
//! entry whose line cannot hold an expression that is still needed is not
//! parsed (nor its text redacted: that was most of a snippet's cost), and
//! only a text an expression is found in goes to the scratch table
//! (`snippet_match::Matcher` tells in Rust what FTS5 would find; a text it
//! cannot tell goes in and FTS5 decides).

use std::path::Path;

use rusqlite::{Connection, OptionalExtension};

use super::rank::Snippet;
use super::rows::{entry_text, TextRow, CHUNK_BYTES};
use super::schema::{self, rowids, Column, SPAN};
use super::snippet_filter::EntryFilter;
use super::snippet_match::{Matcher, Verdict};
use crate::session::{Entry, LinePicker, Pick};

/// Characters of a passage shown as a snippet.
const PASSAGE_SNIPPET_CHARS: usize = 240;
use super::Store;

/// A stored entry whose text a snippet may come from.
struct TextEntry {
    rowid: i64,
    entry_id: String,
    role: String,
    active: bool,
    column: i64,
    line: u64,
}

/// A shown session whose snippets are cut: its file and its best ranking row.
pub(super) struct Shown<'p> {
    pub path: &'p Path,
    pub chunk: i64,
}

/// The scratch table, open for one query's snippets: a savepoint that is
/// rolled back when it is dropped, so its rows never outlive the query (nor
/// reach a segment: FTS5 flushes its pending terms only when a transaction
/// commits, or at a savepoint of a transaction it is already in).
struct Scratch<'c> {
    conn: &'c Connection,
}

impl<'c> Scratch<'c> {
    fn open(store: &'c Store) -> rusqlite::Result<Scratch<'c>> {
        if !store.scratch.get() {
            store.conn.execute_batch(schema::CREATE_SNIPPET_TABLE)?;
            store.scratch.set(true);
        }
        store.conn.execute_batch(schema::OPEN_SCRATCH)?;
        Ok(Scratch { conn: &store.conn })
    }

    /// Write `rows` in one statement (each statement of a transaction is a
    /// savepoint, at which FTS5 would flush the rows written before).
    fn write(&self, rows: &[TextRow]) -> rusqlite::Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        let rows: Vec<serde_json::Value> = rows.iter().map(TextRow::to_json).collect();
        let rows = serde_json::Value::Array(rows).to_string();
        self.conn
            .prepare_cached(schema::INSERT_SNIPPET_ROWS)?
            .execute([rows])?;
        Ok(())
    }
}

impl Drop for Scratch<'_> {
    fn drop(&mut self) {
        if let Err(e) = self.conn.execute_batch(schema::DISCARD_SCRATCH) {
            tracing::debug!("search index: scratch rows not rolled back: {e}");
        }
    }
}

impl Store {
    /// Up to two snippets of each of the `shown` sessions: the rows of its
    /// best ranking row matching the first of `exprs` that finds any, then
    /// the next. The last, the prefix, only when the others found nothing
    /// (see `rank::snippet_expressions`).
    pub(super) fn snippets(
        &self,
        shown: &[Shown<'_>],
        exprs: &[String],
    ) -> rusqlite::Result<Vec<Vec<Snippet>>> {
        let scratch = Scratch::open(self)?;
        let matcher = Matcher::new(exprs);
        // The roots' filter serves only when the matcher cannot tell (it
        // holds the same roots, and more).
        let filter = match matcher {
            Some(_) => EntryFilter::All,
            None => EntryFilter::new(exprs),
        };
        let mut rows = Vec::new();
        let mut entries = Vec::with_capacity(shown.len());
        for s in shown {
            let picker = ChunkPicker::new(&filter, matcher.as_ref());
            entries.push(self.scratch_rows(s.path, s.chunk, picker, &mut rows)?);
        }
        scratch.write(&rows)?;
        shown
            .iter()
            .zip(&entries)
            .map(|(s, entries)| self.cut(s.chunk, entries, exprs))
            .collect()
    }

    /// The snippets of the scratch rows of the ranking row `best`, whose
    /// entries are `entries`.
    fn cut(
        &self,
        best: i64,
        entries: &[TextEntry],
        exprs: &[String],
    ) -> rusqlite::Result<Vec<Snippet>> {
        let (first, last) = rowids(best / SPAN);
        let mut find = self.conn.prepare_cached(schema::SNIPPETS)?;
        let (mut seen, mut snippets) = (Vec::new(), Vec::new());
        for (i, expr) in exprs.iter().enumerate() {
            if seen.len() == 2 || (i == exprs.len() - 1 && i > 0 && !seen.is_empty()) {
                break;
            }
            let rows = find.query_map(rusqlite::params![expr, first, last], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })?;
            for row in rows {
                let (rowid, text): (i64, String) = row?;
                if seen.len() == 2 || seen.contains(&rowid) {
                    continue;
                }
                seen.push(rowid);
                if rowid == first {
                    snippets.push(Snippet {
                        entry_id: None,
                        role: "meta".into(),
                        abandoned: false,
                        text,
                    });
                } else if let Some(e) = entries.iter().find(|e| e.rowid == rowid) {
                    snippets.push(Snippet {
                        entry_id: Some(e.entry_id.clone()),
                        role: e.role.clone(),
                        abandoned: !e.active,
                        text,
                    });
                }
            }
        }
        Ok(snippets)
    }

    /// The scratch rows of the ranking row `best` (the meta row, or the
    /// entries of one chunk read again from `path` that a `picker` picks),
    /// added to `rows`; returns the chunk's entries.
    fn scratch_rows(
        &self,
        path: &Path,
        best: i64,
        picker: ChunkPicker<'_>,
        rows: &mut Vec<TextRow>,
    ) -> rusqlite::Result<Vec<TextEntry>> {
        let (first, last) = rowids(best / SPAN);
        if best == first {
            rows.extend(self.meta_row(best)?);
            return Ok(Vec::new());
        }
        let entries = self.chunk_entries(best, last)?;
        for (entry, text) in read_texts(path, &entries, picker) {
            let mut row = TextRow::new(entry.rowid);
            row.columns[entry.column as usize] = text;
            rows.push(row);
        }
        Ok(entries)
    }

    /// The ranking row that holds entry row `row` (a meta row is its own).
    pub(super) fn ranking_row_of(&self, row: i64) -> rusqlite::Result<Option<i64>> {
        let first = rowids(row / SPAN).0;
        if row == first {
            return Ok(Some(row));
        }
        self.conn
            .prepare_cached(schema::LAST_RANKING_ROW)?
            .query_row([first + 1, row], |r| r.get(0))
    }

    /// The beginning of the text of row `row` (an entry read again from
    /// `path`, or the meta's summary), as a snippet with no match marked:
    /// what a session the dense ranking found shows when the query's words
    /// are not in it.
    pub(super) fn passage_snippet(
        &self,
        path: &Path,
        row: i64,
    ) -> rusqlite::Result<Option<Snippet>> {
        let clip = |t: &str| {
            crate::text::clip(
                &crate::text::flat(t),
                PASSAGE_SNIPPET_CHARS,
                crate::text::Keep::Head,
            )
        };
        if row == rowids(row / SPAN).0 {
            let Some(meta) = self.meta_row(row)? else {
                return Ok(None);
            };
            let text = [Column::Summary, Column::Name]
                .iter()
                .map(|c| meta.columns[*c as usize].trim())
                .find(|t| !t.is_empty());
            return Ok(text.map(|t| Snippet {
                entry_id: None,
                role: "meta".into(),
                abandoned: false,
                text: clip(t),
            }));
        }
        let entries = self.chunk_entries(row, row)?;
        let every = ChunkPicker::new(&EntryFilter::All, None);
        Ok(read_texts(path, &entries, every)
            .into_iter()
            .next()
            .map(|(entry, text)| Snippet {
                entry_id: Some(entry.entry_id.clone()),
                role: entry.role.clone(),
                abandoned: !entry.active,
                text: clip(&text),
            }))
    }

    /// The meta row `rowid`'s text, as stored for it.
    pub(super) fn meta_row(&self, rowid: i64) -> rusqlite::Result<Option<TextRow>> {
        self.conn
            .prepare_cached(schema::META_TEXT)?
            .query_row([rowid / SPAN], |r| {
                let mut row = TextRow::new(rowid);
                for i in 0..5 {
                    row.columns[i] = r.get::<_, Option<String>>(i)?.unwrap_or_default();
                }
                Ok(row)
            })
            .optional()
    }

    /// The entries with text of the ranking row that starts at `start`.
    fn chunk_entries(&self, start: i64, last: i64) -> rusqlite::Result<Vec<TextEntry>> {
        let mut stmt = self.conn.prepare_cached(schema::ENTRIES_WITH_TEXT)?;
        let mut rows = stmt.query([start, last])?;
        let (mut entries, mut bytes) = (Vec::new(), 0);
        while let Some(r) = rows.next()? {
            if bytes >= CHUNK_BYTES {
                break;
            }
            bytes += r.get::<_, i64>(6)?;
            entries.push(TextEntry {
                rowid: r.get(0)?,
                entry_id: r.get(1)?,
                role: r.get(2)?,
                active: r.get(3)?,
                column: r.get::<_, Option<i64>>(4)?.unwrap_or(0),
                line: r.get::<_, i64>(5)? as u64,
            });
        }
        Ok(entries)
    }
}

/// The text (redacted, as the update stored it) of each of `entries` that
/// `picker` picks, read again from the session file `path`; an entry not
/// found where the store says it is has none.
fn read_texts<'e>(
    path: &Path,
    entries: &'e [TextEntry],
    mut picker: ChunkPicker<'_>,
) -> Vec<(&'e TextEntry, String)> {
    let (Some(from), Some(to)) = (entries.first(), entries.last()) else {
        return Vec::new();
    };
    let mut read = ChunkRead {
        entries,
        picker: &mut picker,
        texts: Vec::new(),
    };
    let done = crate::session::open_file(path).and_then(|file| {
        crate::session::read_lines_where(path, file, from.line, to.line + 1, &mut read)
    });
    if let Err(e) = done {
        tracing::debug!("search index: no snippet from {e}");
        return Vec::new();
    }
    read.texts
}

/// Which of a chunk's entries are read for snippets, and which of their
/// texts go to the scratch table. With a [`Matcher`], in file order until
/// the rows read settle each expression's first two rows (`Store::cut`
/// reads no further): expression `i` needs more rows until two rows are
/// found to hold it, and none once an expression before it has two (the
/// cut has its two snippets then) or, for the last one (the prefix, tried
/// only when the others found nothing), one. Lines are parsed only when
/// they may hold a needed expression; a text goes in when an expression
/// may be in it. Without one (an expression it cannot tell), every entry
/// whose line and text `filter` lets in.
struct ChunkPicker<'f> {
    filter: &'f EntryFilter,
    matcher: Option<&'f Matcher>,
    /// Per expression, the rows read so far found to hold it.
    found: Vec<usize>,
}

impl<'f> ChunkPicker<'f> {
    fn new(filter: &'f EntryFilter, matcher: Option<&'f Matcher>) -> ChunkPicker<'f> {
        let found = vec![0; matcher.map_or(0, Matcher::expressions)];
        ChunkPicker {
            filter,
            matcher,
            found,
        }
    }

    /// Whether more rows holding expression `i` may change the snippets.
    fn needs(&self, i: usize) -> bool {
        let before = &self.found[..i];
        let last = i > 0 && i == self.found.len() - 1;
        self.found[i] < 2
            && !before.iter().any(|&n| n >= 2)
            && !(last && before.iter().any(|&n| n >= 1))
    }

    fn pick(&self, line: &[u8]) -> Pick {
        let Some(matcher) = self.matcher else {
            return if self.filter.may_match_line(line) {
                Pick::Parse
            } else {
                Pick::Skip
            };
        };
        let needed: Vec<usize> = (0..matcher.expressions())
            .filter(|&i| self.needs(i))
            .collect();
        if needed.is_empty() {
            return Pick::Stop;
        }
        let words = matcher.line_words(line);
        if needed.iter().any(|&i| matcher.may_match_line(i, words)) {
            Pick::Parse
        } else {
            Pick::Skip
        }
    }

    /// Whether `text` goes to the scratch table (counted as found).
    fn keep(&mut self, text: &str) -> bool {
        let Some(matcher) = self.matcher else {
            return self.filter.may_match(text);
        };
        let verdicts = matcher.verdicts(text);
        for (found, v) in self.found.iter_mut().zip(&verdicts) {
            *found += usize::from(*v == Verdict::Yes);
        }
        verdicts.iter().any(|v| *v != Verdict::No)
    }
}

/// A chunk being read: its entries, and the texts picked so far.
struct ChunkRead<'e, 'p, 'f> {
    entries: &'e [TextEntry],
    picker: &'p mut ChunkPicker<'f>,
    texts: Vec<(&'e TextEntry, String)>,
}

impl ChunkRead<'_, '_, '_> {
    /// The entry of the chunk whose line starts at `start`.
    fn at(&self, start: u64) -> Option<usize> {
        self.entries.iter().position(|e| e.line == start)
    }
}

impl LinePicker for ChunkRead<'_, '_, '_> {
    fn pick(&mut self, start: u64, line: &[u8]) -> Pick {
        match self.at(start) {
            Some(_) => self.picker.pick(line),
            None => Pick::Skip,
        }
    }

    fn taken(&mut self, start: u64, found: &Entry) {
        let Some(entry) = self.at(start).map(|i| &self.entries[i]) else {
            return;
        };
        if found.id.as_str() != entry.entry_id {
            return;
        }
        if let Some(text) = entry_text(found).text {
            if self.picker.keep(&text) {
                self.texts.push((entry, text));
            }
        }
    }
}
