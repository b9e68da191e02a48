//! Bringing the index up to date with the session and meta files: new lines
//! of grown files, whole re-reads of replaced ones, dropped deleted ones.
//! One `BEGIN IMMEDIATE` transaction per session, so several processes can
//! update at once and each session's state is always one file's state.

use std::collections::{HashMap, HashSet};
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rusqlite::{params, Connection, OptionalExtension, Transaction, TransactionBehavior};

use super::{rowids, Index, SearchError, COLUMNS};
use crate::config::PrivacyConfig;
use crate::session::{text_joined, AgentMessage, CompactString, Entry, EntryKind};
use crate::store::meta::SessionMeta;

/// Bytes before the read offset remembered to notice a rewritten file.
const TAIL_BYTES: u64 = 64;
/// Text per ranking row of `docs` (a session's entries are split in chunks of about this size).
const CHUNK_BYTES: i64 = 16 * 1024;
/// Merge work done by each update, in pages per table (enough to keep the
/// number of segments steady under appends; see `Index::update_file`).
const MERGE: &str = "INSERT INTO fts(fts, rank) VALUES('merge', 64); INSERT INTO docs(docs, rank) VALUES('merge', 64);";
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

impl Index {
    /// Bring every session under `sessions_dir` up to date, newest first,
    /// until `budget` runs out (the rest is counted as stale).
    pub fn update(
        &mut self,
        sessions_dir: &Path,
        meta_dir: &Path,
        budget: Option<Duration>,
    ) -> Result<UpdateReport, SearchError> {
        let started = Instant::now();
        let files = crate::session::discovery::session_files(sessions_dir);
        let known: HashMap<String, (FileStat, i64, String)> = self
            .conn
            .prepare("SELECT path, size, mtime_ns, inode, meta_mtime_ns, id FROM sessions")
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
    pub fn update_file(&mut self, path: &Path, meta_dir: &Path) -> Result<bool, SearchError> {
        let key = path.to_string_lossy();
        let privacy = &self.privacy;
        let write = |conn: &mut Connection| {
            let mut todo = plan(conn, path, meta_dir, privacy)?;
            if todo.is_empty() {
                return Ok(false);
            }
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            if stored(&tx, &key)? != todo.stored {
                todo = plan(&tx, path, meta_dir, privacy)?;
            }
            let changed = apply(&tx, &key, todo)?;
            // FTS5's own merging (automerge, off in SCHEMA) writes ~64 pages
            // per level every 64 pages written: one append in four paid for
            // 17-24 ms of it at 10,000 sessions. A little each time instead.
            tx.execute_batch(MERGE)?;
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

/// How far a session file was read, as stored: sid, id, stat, read offset,
/// the bytes before it, format version, meta mtime.
type Stored = (i64, String, FileStat, u64, Vec<u8>, u32, i64);

fn stored(conn: &Connection, key: &str) -> rusqlite::Result<Option<Stored>> {
    let sql =
        "SELECT sid, id, size, mtime_ns, inode, read_to, tail, version, meta_mtime_ns FROM sessions WHERE path = ?1";
    conn.query_row(sql, [key], |r| {
        let (read_to, tail): (i64, Option<Vec<u8>>) = (r.get(5)?, r.get(6)?);
        Ok((
            r.get(0)?,
            r.get(1)?,
            file_stat(r, 2)?,
            read_to as u64,
            tail.unwrap_or_default(),
            r.get(7)?,
            r.get(8)?,
        ))
    })
    .optional()
}

/// An entry's role, and the FTS column of its text with the text, redacted.
type EntryText = (&'static str, Option<(&'static str, String)>);

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
    stored: Option<Stored>,
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

fn plan(
    conn: &Connection,
    path: &Path,
    meta_dir: &Path,
    privacy: &PrivacyConfig,
) -> rusqlite::Result<Plan> {
    let stored = stored(conn, &path.to_string_lossy())?;
    let st = stat(path);
    let mut plan = Plan {
        stored: stored.clone(),
        drop: false,
        lines: None,
        meta: None,
    };
    // Where to read from (`None`: the file is as read, only the meta may have changed).
    let mut from = Some(0);
    if let Some((_, _, old, read_to, tail, version, _)) = &stored {
        if st == Some(*old) {
            from = None;
        } else if st.is_some_and(|st| *version >= 3 && st.inode == old.inode && st.size > old.size)
            && *read_to > 0
            && tail_at(path, *read_to).is_some_and(|t| t == *tail)
        {
            // Appending grows a file; one that did not grow, or whose last read bytes changed, was rewritten.
            from = Some(*read_to);
        } else {
            plan.drop = true;
        }
    }
    let Some(st) = st else {
        plan.drop = stored.is_some();
        return Ok(plan);
    };
    let mut id = stored.as_ref().filter(|_| !plan.drop).map(|s| s.1.clone());
    let mut named = false;
    if let Some(mut from) = from {
        let mut read = crate::session::read_appended(path, from);
        if let (Ok(appended), Some(sid)) = (&read, stored.as_ref().map(|s| s.0)) {
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
                    .is_some_and(|h| privacy.excludes(&h.cwd, path)) =>
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
    if fresh || named || stored.is_some_and(|s| s.6 != mtime) {
        plan.meta = Some((
            crate::store::meta::read(meta_dir, &id).ok().flatten(),
            mtime,
        ));
    }
    Ok(plan)
}

/// Write a prepared update, inside the caller's write transaction.
fn apply(tx: &Transaction<'_>, path: &str, plan: Plan) -> rusqlite::Result<bool> {
    let changed = !plan.is_empty();
    let mut sid = plan.stored.as_ref().map(|s| s.0);
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
                "INSERT INTO sessions(path, id, cwd, created, modified_ms, parent_session, version) \
                 VALUES (?1, ?2, ?3, ?4, 0, ?5, ?6)",
                params![path, h.id, h.cwd, h.timestamp, h.parent_session, h.version],
            )?;
            sid = Some(tx.last_insert_rowid());
        }
        let Some(sid) = sid else { return Ok(changed) };
        from = add_entries(tx, sid, lines)?;
        let st = lines.stat;
        tx.execute(
            "UPDATE sessions SET size = ?2, mtime_ns = ?3, inode = ?4, read_to = ?5, tail = ?6, modified_ms = ?7 \
             WHERE sid = ?1",
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
    let text = |c: &str| format!("group_concat({c}, char(10))");
    let insert = format!(
        "INSERT INTO docs(rowid, {}) SELECT ?1, {} FROM fts WHERE rowid BETWEEN ?1 AND ?2",
        COLUMNS.map(|c| c.0).join(", "),
        COLUMNS.map(|c| text(c.0)).join(", ")
    );
    let mut insert = tx.prepare_cached(&insert)?;
    if from == first {
        tx.execute("DELETE FROM docs WHERE rowid = ?1", [first])?;
        return insert.execute([first, first]).map(drop);
    }
    let open = "SELECT max(rowid) FROM docs WHERE rowid > ?1 AND rowid < ?2";
    let start = tx
        .query_row(open, [first, from], |r| r.get::<_, Option<i64>>(0))?
        .unwrap_or(from);
    tx.execute(
        "DELETE FROM docs WHERE rowid BETWEEN ?1 AND ?2",
        [start, last],
    )?;
    let size = COLUMNS
        .map(|c| format!("ifnull(length({}), 0)", c.0))
        .join(" + ");
    let mut rows = tx.prepare_cached(&format!(
        "SELECT rowid, {size} FROM fts WHERE rowid BETWEEN ?1 AND ?2"
    ))?;
    let mut chunk: Option<(i64, i64)> = None;
    for row in rows.query_map([start, last], |r| {
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
    tx.execute(
        "DELETE FROM fts WHERE rowid BETWEEN ?1 AND ?2",
        [first, last],
    )?;
    tx.execute(
        "DELETE FROM entries WHERE rowid BETWEEN ?1 AND ?2",
        [first, last],
    )?;
    tx.execute(
        "DELETE FROM docs WHERE rowid BETWEEN ?1 AND ?2",
        [first, last],
    )?;
    tx.execute("DELETE FROM sessions WHERE sid = ?1", [sid])?;
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
    (
        role,
        (!text.trim().is_empty()).then(|| (column, crate::redact::redact(&text).into_owned())),
    )
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
/// ranking rows must be rewritten (`None`: no entry was read).
fn add_entries(tx: &Transaction<'_>, sid: i64, lines: &Lines) -> rusqlite::Result<Option<i64>> {
    let (entries, (first, last)) = (&lines.read.entries, rowids(sid));
    let links: Vec<_> = entries
        .iter()
        .map(|e| (e.id.clone(), e.parent_id.clone()))
        .collect();
    let top: i64 = tx
        .query_row(
            "SELECT max(rowid) FROM entries WHERE rowid BETWEEN ?1 AND ?2",
            [first, last],
            |r| r.get::<_, Option<i64>>(0),
        )?
        .unwrap_or(first);
    // Appended entries continue the branch (see `continues`), so they are all active.
    let active = on_branch(&links);
    let (mut messages, mut first_message, mut last_activity) = (0i64, None, 0);
    for (((entry, &active), (role, text)), rowid) in entries
        .iter()
        .zip(&active)
        .zip(&lines.texts)
        .zip(top + 1..=last)
    {
        if let EntryKind::Message(m) = &entry.kind {
            messages += 1;
            if let AgentMessage::User { timestamp, .. }
            | AgentMessage::Assistant { timestamp, .. } = m
            {
                // pi's last activity: the message's own time, else the entry's.
                let t = if *timestamp != 0 {
                    *timestamp
                } else {
                    entry.timestamp
                };
                last_activity = last_activity.max(t);
            }
            if let (None, AgentMessage::User { content, .. }) = (&first_message, m) {
                // pi's preview: the text blocks joined with spaces, redacted before the clip.
                let text = crate::redact::redact(&text_joined(content, " ")).into_owned();
                let clip =
                    |t: &str| crate::text::clip(t, FIRST_MESSAGE_CHARS, crate::text::Keep::Head);
                first_message = (!text.trim().is_empty()).then(|| clip(&text));
            }
        }
        if let EntryKind::SessionInfo { name } = &entry.kind {
            let name = name.as_deref().map(str::trim).filter(|n| !n.is_empty());
            tx.execute(
                "UPDATE sessions SET session_name = ?2 WHERE sid = ?1",
                params![sid, name],
            )?;
        }
        let column = text.as_ref().map(|(c, _)| *c);
        tx.prepare_cached(
            "INSERT INTO entries(rowid, entry_id, role, active, col) VALUES (?1, ?2, ?3, ?4, ?5)",
        )?
        .execute(params![rowid, entry.id.as_str(), role, active, column])?;
        if let Some((column, text)) = text {
            let column = if active { column } else { "abandoned" };
            tx.prepare_cached(&format!("INSERT INTO fts(rowid, {column}) VALUES (?1, ?2)"))?
                .execute(params![rowid, text])?;
        }
    }
    tx.execute(
        "UPDATE sessions SET message_count = message_count + ?2, first_message = COALESCE(first_message, ?3), \
         last_activity_ms = max(last_activity_ms, ?4) WHERE sid = ?1",
        params![sid, messages, first_message, last_activity],
    )?;
    Ok((!entries.is_empty()).then_some(top + 1))
}

/// Whether entries appended to session `sid` continue its last stored entry
/// (an agent run does; a jump to another branch does not).
fn continues(conn: &Connection, sid: i64, entries: &[Entry]) -> rusqlite::Result<bool> {
    let (first, last) = rowids(sid);
    let leaf: Option<String> = conn
        .query_row(
            "SELECT entry_id FROM entries WHERE rowid BETWEEN ?1 AND ?2 ORDER BY rowid DESC LIMIT 1",
            [first, last],
            |r| r.get(0),
        )
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
    let session_name: Option<String> = tx.query_row(
        "SELECT session_name FROM sessions WHERE sid = ?1",
        [sid],
        |r| r.get(0),
    )?;
    let name = meta
        .map(|m| m.name.trim().to_string())
        .filter(|n| !n.is_empty())
        .or(session_name);
    let slug = name.as_deref().map(crate::text::slug);
    let red = |s: &str| crate::redact::redact(s).into_owned();
    let text = |s: &str| Some(red(s)).filter(|s| !s.trim().is_empty());
    let tags = meta.map(|m| m.tags.clone()).unwrap_or_default();
    tx.execute(
        "UPDATE sessions SET name = ?2, slug = ?3, description = ?4, summary = ?5, tags = ?6, has_meta = ?7, \
         model = ?8, cost_usd = ?9, meta_mtime_ns = ?10 WHERE sid = ?1",
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
    tx.execute("DELETE FROM fts WHERE rowid = ?1", [first])?;
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
        "INSERT INTO fts(rowid, name, tags, summary, decisions, files) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![first, red(&name_text), red(&tags.join(" ")), summary, decisions, files],
    )?;
    Ok(())
}
