//! Snippets of the sessions a query shows, cut from their text read again
//! from the session files: the store keeps the words only in its full-text
//! index (which cannot give them back), and where each entry's line starts.
//! The few entries of each shown session's best ranking row are read at
//! those offsets, checked to be the entries stored there (a file rewritten
//! since the last update gives no snippet, not a wrong one), redacted as the
//! update's were, and put in a scratch full-text table of the connection,
//! where FTS5's `snippet()` marks the query's words. The redaction is proven
//! rather than redone where it can be: an entry is read with its texts as
//! written, and its text is used so only when it is the text the update
//! stored, redacted (its length and hash, kept in `entries`); any other
//! entry's line is read again redacted ([`read_texts`]).
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
//!
//! The shown sessions' entries are read on two threads ([`read_chunks`]):
//! each session's are read, parsed and redacted alone, and that was still
//! most of a slow query (the search bench's tail at 10k sessions); the
//! store's connection (the entries' places, the scratch table, `snippet()`)
//! stays on the query's thread.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use rusqlite::{Connection, OptionalExtension};

use super::rank::Snippet;
use super::rows::{entry_text, text_hash, TextRow, CHUNK_BYTES};
use super::schema::{self, rowids, Column, SPAN};
use super::snippet_filter::EntryFilter;
use super::snippet_match::{Matcher, Verdict};
use crate::session::{Cleaning, Entry, LinePicker, Pick, SessionError};

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
    /// The length and [`text_hash`] of its text as the update stored it
    /// (redacted; no hash: stored before hashes were kept).
    bytes: usize,
    hash: Option<i64>,
}

impl TextEntry {
    /// Whether `text` is the text the update stored for this entry (FNV-1a
    /// is no proof against a text made to collide, but only whoever writes
    /// the session file can make one, and what it would show is what they
    /// wrote: no secret of the user's goes out that way).
    fn stored_as(&self, text: &str) -> bool {
        self.hash == Some(text_hash(text)) && self.bytes == text.len()
    }
}

/// A shown session whose snippets are cut: its file and its best ranking row.
pub(super) struct Shown<'p> {
    pub path: &'p Path,
    pub chunk: i64,
}

/// What a shown session's snippets are cut from.
enum Source {
    /// Its meta row (none when it has no meta text).
    Meta(Option<TextRow>),
    /// The entries with text of its best ranking row, in file order.
    Entries(Vec<TextEntry>),
}

impl Source {
    fn entries(&self) -> &[TextEntry] {
        match self {
            Source::Entries(entries) => entries,
            Source::Meta(_) => &[],
        }
    }
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
        // What each shown session's snippets come from, looked up on this
        // thread (the connection's); the entries' texts are read after.
        let mut sources = Vec::with_capacity(shown.len());
        for s in shown {
            sources.push(self.chunk_source(s.chunk)?);
        }
        let chunks: Vec<(&Path, &[TextEntry])> = shown
            .iter()
            .zip(&sources)
            .filter_map(|(s, source)| match source {
                Source::Entries(entries) => Some((s.path, entries.as_slice())),
                Source::Meta(_) => None,
            })
            .collect();
        let mut texts = read_chunks(&chunks, exprs).into_iter();
        let mut rows = Vec::new();
        for source in &sources {
            match source {
                Source::Meta(row) => rows.extend(row.clone()),
                Source::Entries(_) => {
                    for (entry, text) in texts.next().unwrap_or_default() {
                        let mut row = TextRow::new(entry.rowid);
                        row.columns[entry.column as usize] = text;
                        rows.push(row);
                    }
                }
            }
        }
        scratch.write(&rows)?;
        shown
            .iter()
            .zip(&sources)
            .map(|(s, source)| self.cut(s.chunk, source.entries(), exprs))
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

    /// What the snippets of the ranking row `best` are cut from: its meta
    /// row, or the entries of its chunk (whose texts are read again).
    fn chunk_source(&self, best: i64) -> rusqlite::Result<Source> {
        let (first, last) = rowids(best / SPAN);
        Ok(if best == first {
            Source::Meta(self.meta_row(best)?)
        } else {
            Source::Entries(self.chunk_entries(best, last)?)
        })
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
            let text_bytes = r.get::<_, i64>(6)?;
            bytes += text_bytes;
            entries.push(TextEntry {
                rowid: r.get(0)?,
                entry_id: r.get(1)?,
                role: r.get(2)?,
                active: r.get(3)?,
                column: r.get::<_, Option<i64>>(4)?.unwrap_or(0),
                line: r.get::<_, i64>(5)? as u64,
                bytes: usize::try_from(text_bytes).unwrap_or(usize::MAX),
                hash: r.get(7)?,
            });
        }
        Ok(entries)
    }
}

/// Threads that read the shown sessions' texts for one query's snippets.
/// Reading an entry again costs its parse and the redaction of its text,
/// most of a slow query's time (the search bench's slowest at 10k sessions
/// read, parse and redact tens of entries over ten sessions), and each
/// session's are read alone: on two threads, the query's own thread
/// does about a third less at the bench's tail (see the commit).
const READERS: usize = 2;

/// The texts for snippets of each of `chunks` (a session file and the
/// entries of its best ranking row) matching the expressions `exprs`, in
/// their order ([`read_texts`]), read on up to [`READERS`] threads (this
/// one and helpers), each taking the next chunk not yet taken.
fn read_chunks<'e>(
    chunks: &[(&Path, &'e [TextEntry])],
    exprs: &[String],
) -> Vec<Vec<(&'e TextEntry, String)>> {
    let next = AtomicUsize::new(0);
    // Each thread its own matcher: it keeps what it told of the runs it met.
    let read = || {
        let matcher = Matcher::new(exprs);
        // The roots' filter serves only when the matcher cannot tell (it
        // holds the same roots, and more).
        let filter = match matcher {
            Some(_) => EntryFilter::All,
            None => EntryFilter::new(exprs),
        };
        let mut read = Vec::new();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some((path, entries)) = chunks.get(i) else {
                return read;
            };
            let picker = ChunkPicker::new(&filter, matcher.as_ref());
            read.push((i, read_texts(path, entries, picker)));
        }
    };
    let helpers = READERS.min(cores()).min(chunks.len()).saturating_sub(1);
    let mut read = std::thread::scope(|scope| {
        // A helper that cannot start leaves its chunks to this thread.
        let started: Vec<_> = (0..helpers)
            .filter_map(|_| std::thread::Builder::new().spawn_scoped(scope, read).ok())
            .collect();
        let mut all = read();
        for helper in started {
            match helper.join() {
                Ok(done) => all.extend(done),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        all
    });
    read.sort_unstable_by_key(|(i, _)| *i);
    read.into_iter().map(|(_, texts)| texts).collect()
}

/// The cores this process may run on (asked once: the answer reads files).
fn cores() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// The text (redacted, as the update stored it) of each of `entries` that
/// `picker` picks, read again from the session file `path`; an entry not
/// found where the store says it is has none.
///
/// The lines are read with their texts as written ([`Cleaning::AsWritten`]),
/// and an entry's text is used as read only when it is the text the update
/// stored, cleaned (the same length and [`text_hash`]): most entries hold no
/// secret, and the rules were a third of a slow search's time (see the
/// commit). At the first entry whose text is not the stored one (the rules
/// changed it: a secret, a `<private>` span; or its line was rewritten since
/// the update, whatever its size and mtime), the reading stops, that entry's
/// line is read again cleaned, and the reading goes on after it: the picker
/// sees the texts a cleaned reading gives, in the same order, and no text
/// that was not cleaned, or proven equal to a cleaned one, leaves this
/// function.
fn read_texts<'e>(
    path: &Path,
    entries: &'e [TextEntry],
    mut picker: ChunkPicker<'_>,
) -> Vec<(&'e TextEntry, String)> {
    let Some(to) = entries.last() else {
        return Vec::new();
    };
    // Entries stored before hashes were kept cannot be proven: all read cleaned.
    let first_reading = if entries.iter().any(|e| e.hash.is_none()) {
        Cleaning::Cleaned
    } else {
        Cleaning::AsWritten
    };
    let mut read = ChunkRead {
        entries,
        picker: &mut picker,
        texts: Vec::new(),
        cleaning: first_reading,
        unstored: None,
    };
    let mut from = 0;
    while let Some(first) = entries.get(from) {
        read.cleaning = first_reading;
        if let Err(e) = read_lines(path, first.line, to.line + 1, &mut read) {
            return no_snippet(e);
        }
        let Some(i) = read.unstored.take() else {
            break;
        };
        // That entry again, cleaned, in its place; then the ones after it.
        read.cleaning = Cleaning::Cleaned;
        let line = entries[i].line;
        if let Err(e) = read_lines(path, line, line + 1, &mut read) {
            return no_snippet(e);
        }
        from = i + 1;
    }
    read.texts
}

/// The entries of the lines of `path` that start in `from..until`, given to
/// `read`, their texts cleaned as `read.cleaning` says.
fn read_lines(
    path: &Path,
    from: u64,
    until: u64,
    read: &mut ChunkRead<'_, '_, '_>,
) -> Result<(), SessionError> {
    let file = crate::session::open_file(path)?;
    let cleaning = read.cleaning;
    crate::session::read_lines_where(path, file, from, until, read, cleaning).map(drop)
}

/// No texts, when the file cannot be read.
fn no_snippet<'e>(e: SessionError) -> Vec<(&'e TextEntry, String)> {
    tracing::debug!("search index: no snippet from {e}");
    Vec::new()
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
    /// How the lines are read: as written, a text is taken only when it is
    /// the one stored (see [`read_texts`]).
    cleaning: Cleaning,
    /// The entry whose text, read as written, was not the one stored: the
    /// reading stops after its line.
    unstored: Option<usize>,
}

impl ChunkRead<'_, '_, '_> {
    /// The entry of the chunk whose line starts at `start`.
    fn at(&self, start: u64) -> Option<usize> {
        self.entries.iter().position(|e| e.line == start)
    }
}

impl LinePicker for ChunkRead<'_, '_, '_> {
    /// The line of the chunk's next entry: the lines between (tool output,
    /// entries without text) are not read. None once an entry read as
    /// written was not the stored one (it is read again, cleaned, next).
    fn next_start(&mut self, offset: u64) -> Option<u64> {
        if self.unstored.is_some() {
            return None;
        }
        self.entries
            .iter()
            .map(|e| e.line)
            .find(|&line| line >= offset)
    }

    fn pick(&mut self, start: u64, line: &[u8]) -> Pick {
        match self.at(start) {
            Some(_) => self.picker.pick(line),
            None => Pick::Skip,
        }
    }

    fn taken(&mut self, start: u64, found: &Entry) {
        let Some(i) = self.at(start) else {
            return;
        };
        let entry = &self.entries[i];
        if found.id.as_str() != entry.entry_id {
            return;
        }
        let cleaned = self.cleaning == Cleaning::Cleaned;
        match entry_text(found).text {
            Some(text) if cleaned || entry.stored_as(&text) => {
                if self.picker.keep(&text) {
                    self.texts.push((entry, text));
                }
            }
            _ if cleaned => {}
            _ => self.unstored = Some(i),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A session file of `texts` (user messages, one a line after the
    /// header) and its entries as the store keeps them.
    fn session(dir: &Path, name: &str, texts: &[&str]) -> (std::path::PathBuf, Vec<TextEntry>) {
        let path = dir.join(format!("{name}.jsonl"));
        let mut file =
            String::from("{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"cwd\":\"/p\"}\n");
        let mut entries = Vec::new();
        for (i, text) in texts.iter().enumerate() {
            let line = serde_json::json!({
                "type": "message", "id": format!("{name}-{i}"), "parentId": null,
                "timestamp": "2026-02-20T12:00:01.000Z",
                "message": {"role": "user", "content": [{"type": "text", "text": text}]},
            });
            entries.push(TextEntry {
                rowid: i as i64 + 1,
                entry_id: format!("{name}-{i}"),
                role: "user".into(),
                active: true,
                column: Column::User as i64,
                line: file.len() as u64,
                // As the update stores it: the hash of the redacted text.
                bytes: crate::redact::session_text(text).len(),
                hash: Some(text_hash(&crate::redact::session_text(text))),
            });
            file.push_str(&format!("{line}\n"));
        }
        std::fs::write(&path, file).unwrap();
        (path, entries)
    }

    #[test]
    fn chunks_read_on_several_threads_come_back_in_their_order() {
        let dir = tempfile::tempdir().unwrap();
        let sessions: Vec<_> = (0..7)
            .map(|k| {
                let texts: Vec<String> = (0..=k)
                    .map(|i| format!("session {k} line {i} about the cron job"))
                    .collect();
                let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
                session(dir.path(), &format!("s{k}"), &texts)
            })
            .collect();
        let chunks: Vec<(&Path, &[TextEntry])> = sessions
            .iter()
            .map(|(path, entries)| (path.as_path(), entries.as_slice()))
            .collect();
        let exprs = vec!["\"cron\"".to_string()];
        let matcher = Matcher::new(&exprs);
        let alone: Vec<Vec<(i64, String)>> = chunks
            .iter()
            .map(|(path, entries)| {
                let picker = ChunkPicker::new(&EntryFilter::All, matcher.as_ref());
                read_texts(path, entries, picker)
                    .into_iter()
                    .map(|(e, text)| (e.rowid, text))
                    .collect()
            })
            .collect();
        let together: Vec<Vec<(i64, String)>> = read_chunks(&chunks, &exprs)
            .into_iter()
            .map(|texts| texts.into_iter().map(|(e, t)| (e.rowid, t)).collect())
            .collect();
        assert_eq!(together, alone);
        // Each session's snippets need its first two rows holding the word.
        let counts: Vec<usize> = together.iter().map(Vec::len).collect();
        assert_eq!(counts, [1, 2, 2, 2, 2, 2, 2]);
        assert!(together[3][1].1.contains("session 3 line 1"));
    }

    /// Entries whose texts the rules change (secrets) are read again with
    /// them, between entries used as read: every text comes back once, in
    /// file order, redacted; the same without hashes (a store made before
    /// they were kept).
    #[test]
    fn entries_the_rules_change_are_read_again_in_their_place() {
        let dir = tempfile::tempdir().unwrap();
        let key = "sk-ant-api03-Zq8vLr2Xw9Tb4Nc7Md1Pe6Hf3Jg5Ks0";
        let texts = [
            "first about the cron job".to_string(),
            format!("second my key is {key} keep it"),
            format!("third my key is {key} again"),
            "fourth about the cron job".to_string(),
            format!("fifth my key is {key} at the end"),
        ];
        let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
        let (path, mut entries) = session(dir.path(), "s", &texts);
        let read = |entries: &[TextEntry]| -> Vec<String> {
            let every = ChunkPicker::new(&EntryFilter::All, None);
            read_texts(&path, entries, every)
                .into_iter()
                .map(|(_, text)| text)
                .collect()
        };
        let shown = read(&entries);
        let redacted: Vec<String> = texts
            .iter()
            .map(|t| t.replace(key, crate::redact::REDACTED))
            .collect();
        assert_eq!(shown, redacted);
        for entry in &mut entries {
            entry.hash = None;
        }
        assert_eq!(read(&entries), redacted);
    }
}
