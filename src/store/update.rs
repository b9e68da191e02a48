//! Bringing the store up to date with the session and meta files: new lines
//! of grown files, whole re-reads of replaced ones, dropped deleted ones.
//! One `BEGIN IMMEDIATE` transaction per session, so several processes can
//! update at once and each session's state is always one file's state.

use std::collections::{HashMap, HashSet};
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rusqlite::{params, Connection, OptionalExtension, Transaction, TransactionBehavior};

use super::schema::{self, rowids};
use super::{Gate, Store, StoreError};
use crate::session::{text_joined, AgentMessage, CompactString, Entry, EntryKind};
use crate::store::meta::SessionMeta;

/// Bytes before the read offset remembered to notice a rewritten file.
const TAIL_BYTES: u64 = 64;
/// Text per ranking row of `docs` (a session's entries are split in chunks of about this size).
const CHUNK_BYTES: i64 = 16 * 1024;
/// Longest first message kept in the `sessions` table.
const FIRST_MESSAGE_CHARS: usize = 500;

/// What an update did.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UpdateReport {
    /// Session files found.
    pub files: usize,
    /// Sessions (re)read or whose meta was picked up.
    pub updated: usize,
    /// Sessions dropped because their file is gone.
    pub removed: usize,
    /// Changed sessions left for later because the time budget ran out.
    pub stale: usize,
}

/// What a file looked like when it was stat'ed.
#[derive(Debug, Clone, Copy, PartialEq)]
struct FileStat {
    size: u64,
    mtime_ns: i64,
    inode: u64,
}

fn stat(path: &Path) -> Option<FileStat> {
    let md = std::fs::symlink_metadata(path)
        .ok()
        .filter(|m| m.file_type().is_file())?;
    let mtime_ns = md
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos().min(i64::MAX as u128) as i64);
    #[cfg(unix)]
    let inode = std::os::unix::fs::MetadataExt::ino(&md);
    #[cfg(not(unix))]
    let inode = 0;
    Some(FileStat {
        size: md.len(),
        mtime_ns,
        inode,
    })
}

fn meta_mtime(meta_dir: &Path, id: &str) -> i64 {
    crate::store::meta::meta_path(meta_dir, id)
        .ok()
        .and_then(|p| stat(&p))
        .map_or(0, |s| s.mtime_ns)
}

impl Store {
    /// Bring every session under `sessions_dir` up to date, newest first,
    /// until `budget` runs out (the rest is counted as stale).
    pub fn update(
        &mut self,
        sessions_dir: &Path,
        meta_dir: &Path,
        budget: Option<Duration>,
    ) -> Result<UpdateReport, StoreError> {
        let started = Instant::now();
        let files = crate::session::discovery::session_files(sessions_dir);
        let known: HashMap<String, (FileStat, i64, String)> = self
            .conn
            .prepare(schema::KNOWN_FILES)
            .and_then(|mut s| {
                s.query_map([], |r| {
                    Ok((r.get(0)?, (file_stat(r, 1)?, r.get(4)?, r.get(5)?)))
                })?
                .collect()
            })
            .map_err(|e| self.sql(e))?;
        let mut changed: Vec<(PathBuf, FileStat)> = files
            .iter()
            .filter_map(|p| Some((p.clone(), stat(p)?)))
            .filter(|(p, st)| {
                known
                    .get(&*p.to_string_lossy())
                    .is_none_or(|(old, meta, id)| old != st || *meta != meta_mtime(meta_dir, id))
            })
            .collect();
        changed.sort_by_key(|(_, st)| std::cmp::Reverse(st.mtime_ns));
        let mut report = UpdateReport {
            files: files.len(),
            ..UpdateReport::default()
        };
        for (i, (path, _)) in changed.iter().enumerate() {
            if budget.is_some_and(|b| started.elapsed() >= b) {
                report.stale = changed.len() - i;
                break;
            }
            report.updated += usize::from(self.update_file(path, meta_dir)?);
        }
        let present: HashSet<String> = files
            .iter()
            .map(|p| p.to_string_lossy().into_owned())
            .collect();
        for gone in known.keys().filter(|p| !present.contains(*p)) {
            report.removed += usize::from(self.update_file(Path::new(gone), meta_dir)?);
        }
        Ok(report)
    }

    /// Bring one session file up to date (what `agent_end` needs): `Ok(true)`
    /// when something changed. A file that is gone or not a pi session drops out.
    /// The file is read, parsed and redacted before the write lock is taken,
    /// so writers queue only for the short transaction; under the lock the
    /// stored state is checked again, and read anew if another process moved it.
    pub fn update_file(&mut self, path: &Path, meta_dir: &Path) -> Result<bool, StoreError> {
        let key = path.to_string_lossy();
        let gate = &self.gate;
        let write = |conn: &mut Connection| {
            let mut todo = plan(conn, path, meta_dir, gate)?;
            if todo.is_empty() {
                return Ok(false);
            }
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            if stored_file(&tx, &key)? != todo.stored {
                todo = plan(&tx, path, meta_dir, gate)?;
            }
            let changed = apply(&tx, &key, todo)?;
            // FTS5's own merging (automerge, off in SCHEMA) writes ~64 pages
            // per level every 64 pages written: one append in four paid for
            // 17-24 ms of it at 10,000 sessions. A little each time instead.
            tx.execute_batch(schema::MERGE)?;
            tx.commit().map(|_| changed)
        };
        write(&mut self.conn).map_err(|e| self.sql(e))
    }
}

fn file_stat(r: &rusqlite::Row<'_>, at: usize) -> rusqlite::Result<FileStat> {
    Ok(FileStat {
        size: r.get::<_, i64>(at)? as u64,
        mtime_ns: r.get(at + 1)?,
        inode: r.get::<_, i64>(at + 2)? as u64,
    })
}

/// How far a session file was read, as stored.
#[derive(Debug, Clone, PartialEq)]
struct StoredFile {
    sid: i64,
    id: String,
    stat: FileStat,
    /// The offset after the last complete line read.
    read_to: u64,
    /// The [`TAIL_BYTES`] before `read_to`, to notice a rewritten file.
    tail: Vec<u8>,
    /// The session format version (appends are read only from version 3).
    version: u32,
    /// The meta file's mtime when it was read (0: none).
    meta_mtime_ns: i64,
}

fn stored_file(conn: &Connection, key: &str) -> rusqlite::Result<Option<StoredFile>> {
    conn.query_row(schema::STORED_FILE, [key], |r| {
        let (read_to, tail): (i64, Option<Vec<u8>>) = (r.get(5)?, r.get(6)?);
        Ok(StoredFile {
            sid: r.get(0)?,
            id: r.get(1)?,
            stat: file_stat(r, 2)?,
            read_to: read_to as u64,
            tail: tail.unwrap_or_default(),
            version: r.get(7)?,
            meta_mtime_ns: r.get(8)?,
        })
    })
    .optional()
}

/// An entry's role, and its text (redacted) with the FTS column it goes to.
struct EntryText {
    role: &'static str,
    text: Option<ColumnText>,
}

struct ColumnText {
    /// On the active branch; an abandoned entry's text goes to `abandoned`.
    column: &'static str,
    text: String,
}

/// Lines read from a session file, ready to store.
struct Lines {
    read: crate::session::Appended,
    texts: Vec<EntryText>,
    stat: FileStat,
    tail: Option<Vec<u8>>,
}

/// One file's update, prepared without the write lock: the state it was
/// prepared from, and what to write.
struct Plan {
    stored: Option<StoredFile>,
    /// Drop the stored session first (its file was rewritten or is gone).
    drop: bool,
    lines: Option<Lines>,
    /// The meta to store and its file's mtime (`None`: unchanged).
    meta: Option<(Option<SessionMeta>, i64)>,
}

impl Plan {
    fn is_empty(&self) -> bool {
        !self.drop && self.lines.is_none() && self.meta.is_none()
    }
}

fn plan(conn: &Connection, path: &Path, meta_dir: &Path, gate: &Gate) -> rusqlite::Result<Plan> {
    let stored = stored_file(conn, &path.to_string_lossy())?;
    let st = stat(path);
    let mut plan = Plan {
        stored: stored.clone(),
        drop: false,
        lines: None,
        meta: None,
    };
    // Where to read from (`None`: the file is as read, only the meta may have changed).
    let mut from = Some(0);
    if let Some(old) = &stored {
        if st == Some(old.stat) {
            from = None;
        } else if st.is_some_and(|st| is_append(path, old, st)) {
            from = Some(old.read_to);
        } else {
            plan.drop = true;
        }
    }
    let Some(st) = st else {
        plan.drop = stored.is_some();
        return Ok(plan);
    };
    let mut id = stored.as_ref().filter(|_| !plan.drop).map(|s| s.id.clone());
    let mut named = false;
    if let Some(mut from) = from {
        let mut read = crate::session::read_appended(path, from);
        if let (Ok(appended), Some(sid)) = (&read, stored.as_ref().map(|s| s.sid)) {
            if from > 0 && !continues(conn, sid, &appended.entries)? {
                // Another branch was taken: read whole, so the active branch is found anew.
                (plan.drop, from) = (true, 0);
                read = crate::session::read_appended(path, 0);
            }
        }
        match read {
            // Nothing complete to read yet in a new file.
            Ok(read) if from == 0 && read.header.is_none() => return Ok(plan),
            // Kept out by privacy.exclude: what was stored of it goes.
            Ok(read)
                if read
                    .header
                    .as_ref()
                    .is_some_and(|h| gate.excludes(&h.cwd, path)) =>
            {
                plan.drop = stored.is_some();
                return Ok(plan);
            }
            Ok(read) => {
                id = id.or_else(|| read.header.as_ref().map(|h| h.id.clone()));
                named = read
                    .entries
                    .iter()
                    .any(|e| matches!(e.kind, EntryKind::SessionInfo { .. }));
                let texts = read.entries.iter().map(entry_text).collect();
                let tail = tail_at(path, read.end);
                plan.lines = Some(Lines {
                    texts,
                    stat: st,
                    tail,
                    read,
                });
            }
            // Unreadable or not a pi session (any more): it stays out.
            Err(e) => {
                tracing::debug!("search index: skipping {e}");
                return Ok(plan);
            }
        }
    }
    let Some(id) = id else { return Ok(plan) };
    let mtime = meta_mtime(meta_dir, &id);
    let fresh = stored.is_none() || plan.drop;
    if fresh || named || stored.is_some_and(|s| s.meta_mtime_ns != mtime) {
        plan.meta = Some((
            crate::store::meta::read(meta_dir, &id).ok().flatten(),
            mtime,
        ));
    }
    Ok(plan)
}

/// Whether the file grew by appends since it was read as `old`: same inode,
/// larger, and the bytes before the old read offset unchanged (a file that
/// did not grow, or whose last read bytes changed, was rewritten).
fn is_append(path: &Path, old: &StoredFile, now: FileStat) -> bool {
    old.version >= 3
        && now.inode == old.stat.inode
        && now.size > old.stat.size
        && old.read_to > 0
        && tail_at(path, old.read_to).is_some_and(|t| t == old.tail)
}

/// Write a prepared update, inside the caller's write transaction.
fn apply(tx: &Transaction<'_>, path: &str, plan: Plan) -> rusqlite::Result<bool> {
    let changed = !plan.is_empty();
    let mut sid = plan.stored.as_ref().map(|s| s.sid);
    // The first `fts` rowid whose ranking rows are to be written.
    let mut from = None;
    if plan.drop {
        if let Some(sid) = sid.take() {
            drop_session(tx, sid)?;
        }
    }
    if let Some(lines) = &plan.lines {
        if let (None, Some(h)) = (sid, &lines.read.header) {
            tx.execute(
                schema::INSERT_SESSION,
                params![path, h.id, h.cwd, h.timestamp, h.parent_session, h.version],
            )?;
            sid = Some(tx.last_insert_rowid());
        }
        let Some(sid) = sid else { return Ok(changed) };
        from = add_entries(tx, sid, lines)?;
        let st = lines.stat;
        tx.execute(
            schema::SET_READ_STATE,
            params![
                sid,
                st.size as i64,
                st.mtime_ns,
                st.inode as i64,
                lines.read.end as i64,
                lines.tail,
                st.mtime_ns / 1_000_000
            ],
        )?;
    }
    let Some(sid) = sid else { return Ok(changed) };
    if let Some((meta, mtime)) = &plan.meta {
        set_meta(tx, sid, meta.as_ref(), *mtime)?;
        write_docs(tx, sid, rowids(sid).0)?;
    }
    if let Some(from) = from {
        write_docs(tx, sid, from)?;
    }
    Ok(changed)
}

/// The session's ranking rows in `docs`, from its `fts` rows: the meta row
/// (`from` = the session's first rowid) alone, or the entries from rowid
/// `from` on, in chunks of about `CHUNK_BYTES` of text, each keyed by its
/// first rowid. The chunk before `from` is written again with the new rows
/// (it takes them while it is not full), so an append rewrites at most one
/// chunk however long the session, and the rows are the ones a full build
/// writes: how the index was built never changes how it ranks. (Appended
/// text in rows of its own, one per agent run, was tried: updates were
/// cheaper, but recall fell from 12/13 and 13/14 to 11/13 and 12/14.)
fn write_docs(tx: &Transaction<'_>, sid: i64, from: i64) -> rusqlite::Result<()> {
    let (first, last) = rowids(sid);
    let mut insert = tx.prepare_cached(schema::INSERT_RANKING_ROW)?;
    if from == first {
        tx.execute(schema::DELETE_RANKING_ROW, [first])?;
        return insert.execute([first, first]).map(drop);
    }
    let start = tx
        .query_row(schema::LAST_RANKING_ROW, [first, from], |r| {
            r.get::<_, Option<i64>>(0)
        })?
        .unwrap_or(from);
    tx.execute(schema::DELETE_RANKING_ROWS, [start, last])?;
    let mut sizes = tx.prepare_cached(schema::TEXT_SIZES)?;
    let mut chunk: Option<(i64, i64)> = None;
    for row in sizes.query_map([start, last], |r| {
        Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?))
    })? {
        let (rowid, bytes) = row?;
        if let Some((begin, _)) = chunk.filter(|c| c.1 >= CHUNK_BYTES) {
            insert.execute([begin, rowid - 1])?;
            chunk = None;
        }
        chunk.get_or_insert((rowid, 0)).1 += bytes;
    }
    if let Some((begin, _)) = chunk {
        insert.execute([begin, last])?;
    }
    Ok(())
}

/// The `TAIL_BYTES` bytes before `offset`.
fn tail_at(path: &Path, offset: u64) -> Option<Vec<u8>> {
    let start = offset.saturating_sub(TAIL_BYTES);
    let mut file = regular_files::open_regular(path).ok()?;
    file.seek(SeekFrom::Start(start)).ok()?;
    let mut buf = vec![0; (offset - start) as usize];
    file.read_exact(&mut buf).ok()?;
    Some(buf)
}

/// Drop a session: its row, entries and text.
fn drop_session(tx: &Transaction<'_>, sid: i64) -> rusqlite::Result<()> {
    let (first, last) = rowids(sid);
    tx.execute(schema::DELETE_TEXT, [first, last])?;
    tx.execute(schema::DELETE_ENTRIES, [first, last])?;
    tx.execute(schema::DELETE_RANKING_ROWS, [first, last])?;
    tx.execute(schema::DELETE_SESSION, [sid])?;
    Ok(())
}

/// An entry's role, and the FTS column its text goes to (on the active
/// branch) with the text, redacted.
fn entry_text(entry: &Entry) -> EntryText {
    let (role, text) = match &entry.kind {
        // Custom messages are extensions' injections (e.g. `@@` context from other sessions).
        EntryKind::Message(m @ AgentMessage::Custom { .. }) => (m.role(), String::new()),
        EntryKind::Message(m) => {
            let items = crate::features::query::windows::message_items(&entry.id, m);
            (
                m.role(),
                items
                    .iter()
                    .map(|i| i.text.as_str())
                    .collect::<Vec<_>>()
                    .join("\n"),
            )
        }
        EntryKind::Compaction { summary, .. } => ("compaction", summary.clone()),
        EntryKind::BranchSummary { summary, .. } => ("branchSummary", summary.clone()),
        _ => ("other", String::new()),
    };
    let column = match role {
        "user" => "user",
        "toolResult" | "bashExecution" => "tool",
        _ => "assistant",
    };
    let text = (!text.trim().is_empty()).then(|| ColumnText {
        column,
        text: crate::redact::redact(&text).into_owned(),
    });
    EntryText { role, text }
}

/// Which of `links` (id, parent id, in file order) are on the branch ending
/// at the last one (pi's default leaf); a later duplicate id wins.
fn on_branch(links: &[(CompactString, Option<CompactString>)]) -> Vec<bool> {
    let by_id: HashMap<&str, usize> = links
        .iter()
        .enumerate()
        .map(|(i, (id, _))| (id.as_str(), i))
        .collect();
    let mut on = vec![false; links.len()];
    let mut cur = links.len().checked_sub(1);
    while let Some(i) = cur.filter(|&i| !on[i]) {
        on[i] = true;
        cur = links[i].1.as_deref().and_then(|p| by_id.get(p).copied());
    }
    on
}

/// Index the entries read from the file; returns the first rowid whose
/// ranking rows must be rewritten (`None`: no entry was read). Entries past
/// the session's rowid range ([`schema::SPAN`]) are not indexed.
fn add_entries(tx: &Transaction<'_>, sid: i64, lines: &Lines) -> rusqlite::Result<Option<i64>> {
    let (entries, (first, last)) = (&lines.read.entries, rowids(sid));
    let top: i64 = tx
        .query_row(schema::LAST_ENTRY_ROWID, [first, last], |r| {
            r.get::<_, Option<i64>>(0)
        })?
        .unwrap_or(first);
    let links: Vec<_> = entries
        .iter()
        .map(|e| (e.id.clone(), e.parent_id.clone()))
        .collect();
    // Appended entries continue the branch (see `continues`), so they are all active.
    let active = on_branch(&links);
    let room = usize::try_from(last - top).unwrap_or(0);
    let mut counts = MessageCounts::default();
    for (i, entry) in entries.iter().enumerate().take(room) {
        counts.count(entry);
        let rowid = top + 1 + i as i64;
        add_entry(tx, sid, rowid, entry, active[i], &lines.texts[i])?;
    }
    tx.execute(
        schema::ADD_MESSAGES,
        params![
            sid,
            counts.messages,
            counts.first_message,
            counts.last_activity_ms
        ],
    )?;
    Ok((!entries.is_empty()).then_some(top + 1))
}

/// One entry's row in `entries` and its text in `fts` (and pi's name, when
/// it is a `session_info` entry).
fn add_entry(
    tx: &Transaction<'_>,
    sid: i64,
    rowid: i64,
    entry: &Entry,
    active: bool,
    text: &EntryText,
) -> rusqlite::Result<()> {
    if let EntryKind::SessionInfo { name } = &entry.kind {
        let name = name.as_deref().map(str::trim).filter(|n| !n.is_empty());
        tx.execute(schema::SET_SESSION_NAME, params![sid, name])?;
    }
    let column = text.text.as_ref().map(|t| t.column);
    tx.prepare_cached(schema::INSERT_ENTRY)?.execute(params![
        rowid,
        entry.id.as_str(),
        text.role,
        active,
        column
    ])?;
    if let Some(ColumnText { column, text }) = &text.text {
        let column = if active { column } else { "abandoned" };
        tx.prepare_cached(schema::insert_entry_text(column))?
            .execute(params![rowid, text])?;
    }
    Ok(())
}

/// What the `sessions` row sums up of the messages read.
#[derive(Default)]
struct MessageCounts {
    messages: i64,
    /// pi's preview of the first user message, redacted, then clipped.
    first_message: Option<String>,
    /// pi's last activity: the latest user or assistant message time.
    last_activity_ms: i64,
}

impl MessageCounts {
    fn count(&mut self, entry: &Entry) {
        let EntryKind::Message(m) = &entry.kind else {
            return;
        };
        self.messages += 1;
        if let AgentMessage::User { timestamp, .. } | AgentMessage::Assistant { timestamp, .. } = m
        {
            // The message's own time, else the entry's.
            let t = if *timestamp != 0 {
                *timestamp
            } else {
                entry.timestamp
            };
            self.last_activity_ms = self.last_activity_ms.max(t);
        }
        if let (None, AgentMessage::User { content, .. }) = (&self.first_message, m) {
            // pi's preview: the text blocks joined with spaces, redacted before the clip.
            let text = crate::redact::redact(&text_joined(content, " ")).into_owned();
            self.first_message = (!text.trim().is_empty())
                .then(|| crate::text::clip(&text, FIRST_MESSAGE_CHARS, crate::text::Keep::Head));
        }
    }
}

/// Whether entries appended to session `sid` continue its last stored entry
/// (an agent run does; a jump to another branch does not).
fn continues(conn: &Connection, sid: i64, entries: &[Entry]) -> rusqlite::Result<bool> {
    let (first, last) = rowids(sid);
    let leaf: Option<String> = conn
        .query_row(schema::LAST_ENTRY_ID, [first, last], |r| r.get(0))
        .optional()?;
    Ok(entries.iter().enumerate().all(|(i, e)| match i {
        0 => e.parent_id.as_deref() == leaf.as_deref(),
        _ => e.parent_id.as_deref() == Some(entries[i - 1].id.as_str()),
    }))
}

/// The meta fields: the `sessions` columns and the session's meta row in
/// the FTS table (the session's first rowid), with the file's own name when there is no meta.
fn set_meta(
    tx: &Transaction<'_>,
    sid: i64,
    meta: Option<&SessionMeta>,
    mtime_ns: i64,
) -> rusqlite::Result<()> {
    let session_name: Option<String> = tx.query_row(schema::SESSION_NAME, [sid], |r| r.get(0))?;
    let name = meta
        .map(|m| m.name.trim().to_string())
        .filter(|n| !n.is_empty())
        .or(session_name);
    let slug = name.as_deref().map(crate::text::slug);
    let red = |s: &str| crate::redact::redact(s).into_owned();
    let text = |s: &str| Some(red(s)).filter(|s| !s.trim().is_empty());
    let tags = meta.map(|m| m.tags.clone()).unwrap_or_default();
    tx.execute(
        schema::SET_META,
        params![
            sid,
            name.as_deref().map(red),
            slug,
            meta.and_then(|m| text(&m.description)),
            meta.and_then(|m| text(&m.summary)),
            serde_json::to_string(&tags).unwrap_or_else(|_| "[]".into()),
            meta.is_some(),
            meta.map(|m| m.model.clone()).filter(|m| !m.is_empty()),
            meta.and_then(|m| m.usage.as_ref()).map(|u| u.cost_usd),
            mtime_ns,
        ],
    )?;
    let first = rowids(sid).0;
    tx.execute(schema::DELETE_TEXT_ROW, [first])?;
    let join = |parts: &[&[String]]| {
        red(&parts
            .iter()
            .flat_map(|p| p.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join("\n"))
    };
    let (summary, decisions, files) = match meta {
        Some(m) => {
            let files = m
                .files
                .as_ref()
                .map(|f| join(&[&f.read, &f.modified]))
                .unwrap_or_default();
            (
                red(&format!("{}\n{}", m.description, m.summary)),
                join(&[&m.decisions, &m.open_tasks]),
                files,
            )
        }
        None => Default::default(),
    };
    let name_text = [name.as_deref(), slug.as_deref()]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(" ");
    tx.execute(
        schema::INSERT_META_TEXT,
        params![
            first,
            red(&name_text),
            red(&tags.join(" ")),
            summary,
            decisions,
            files
        ],
    )?;
    Ok(())
}
