//! Bringing the index up to date with the session and meta files: new lines
//! of grown files, whole re-reads of replaced ones, dropped deleted ones.
//! One `BEGIN IMMEDIATE` transaction per session, so several processes can
//! update at once and each session's state is always one file's state.

use std::collections::{HashMap, HashSet};
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rusqlite::{params, OptionalExtension, Transaction, TransactionBehavior};

use super::{Index, SearchError};
use crate::meta::SessionMeta;
use crate::session::{AgentMessage, Entry, EntryKind};

/// Bytes before the read offset remembered to notice a rewritten file.
const TAIL_BYTES: u64 = 64;
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
    let md = std::fs::symlink_metadata(path).ok().filter(|m| m.file_type().is_file())?;
    let mtime_ns = md
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos().min(i64::MAX as u128) as i64);
    #[cfg(unix)]
    let inode = std::os::unix::fs::MetadataExt::ino(&md);
    #[cfg(not(unix))]
    let inode = 0;
    Some(FileStat { size: md.len(), mtime_ns, inode })
}

fn meta_mtime(meta_dir: &Path, id: &str) -> i64 {
    crate::meta::meta_path(meta_dir, id).ok().and_then(|p| stat(&p)).map_or(0, |s| s.mtime_ns)
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
            .and_then(|mut s| s.query_map([], |r| Ok((r.get(0)?, (file_stat(r, 1)?, r.get(4)?, r.get(5)?))))?.collect())
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
        let mut report = UpdateReport { files: files.len(), ..UpdateReport::default() };
        for (i, (path, _)) in changed.iter().enumerate() {
            if budget.is_some_and(|b| started.elapsed() >= b) {
                report.stale = changed.len() - i;
                break;
            }
            report.updated += usize::from(self.update_file(path, meta_dir)?);
        }
        let present: HashSet<String> = files.iter().map(|p| p.to_string_lossy().into_owned()).collect();
        for gone in known.keys().filter(|p| !present.contains(*p)) {
            report.removed += usize::from(self.update_file(Path::new(gone), meta_dir)?);
        }
        Ok(report)
    }

    /// Bring one session file up to date (what `agent_end` needs): `Ok(true)`
    /// when something changed. A file that is gone or not a pi session drops out.
    pub fn update_file(&mut self, path: &Path, meta_dir: &Path) -> Result<bool, SearchError> {
        let write = |conn: &mut rusqlite::Connection| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let changed = sync(&tx, path, meta_dir)?;
            tx.commit().map(|_| changed)
        };
        write(&mut self.conn).map_err(|e| self.sql(e))
    }
}

fn file_stat(r: &rusqlite::Row<'_>, at: usize) -> rusqlite::Result<FileStat> {
    Ok(FileStat { size: r.get::<_, i64>(at)? as u64, mtime_ns: r.get(at + 1)?, inode: r.get::<_, i64>(at + 2)? as u64 })
}

/// One session's update, inside the caller's write transaction.
fn sync(tx: &Transaction<'_>, path: &Path, meta_dir: &Path) -> rusqlite::Result<bool> {
    let key = path.to_string_lossy();
    let stored = tx
        .query_row(
            "SELECT sid, id, size, mtime_ns, inode, read_to, tail, version, meta_mtime_ns FROM sessions WHERE path = ?1",
            [&key],
            |r| {
                let (sid, id, old, read_to): (i64, String, _, i64) = (r.get(0)?, r.get(1)?, file_stat(r, 2)?, r.get(5)?);
                let (tail, version, meta): (Option<Vec<u8>>, u32, i64) = (r.get(6)?, r.get(7)?, r.get(8)?);
                Ok((sid, id, old, read_to as u64, tail.unwrap_or_default(), version, meta))
            },
        )
        .optional()?;
    let st = stat(path);
    // The session to add to and the offset to read from (`None`: only the meta changed).
    let mut target = None;
    let existed = stored.is_some();
    // The meta row is rewritten when the meta file or the session's own name changed.
    let mut meta_seen = stored.as_ref().map(|s| s.6);
    if let Some((sid, id, old, read_to, tail, version, meta)) = stored {
        let same = st == Some(old);
        if same && meta == meta_mtime(meta_dir, &id) {
            return Ok(false);
        }
        // Appending grows a file; one that did not grow, or whose last read bytes changed, was rewritten.
        let grew = st.is_some_and(|st| version >= 3 && st.inode == old.inode && st.size > old.size && read_to > 0)
            && tail_at(path, read_to).is_some_and(|t| t == tail);
        match (same, grew) {
            (true, _) => target = Some((sid, None)),
            (false, true) => target = Some((sid, Some(read_to))),
            (false, false) => {
                drop_session(tx, sid)?;
                meta_seen = None;
            }
        }
    }
    let Some(st) = st else { return Ok(existed) };
    let sid = match target {
        Some((sid, None)) => sid,
        _ => {
            let from = target.and_then(|(_, from)| from).unwrap_or(0);
            let read = match crate::session::read_appended(path, from) {
                Ok(read) => read,
                Err(e) => {
                    // Unreadable or not a pi session (any more): it stays out.
                    tracing::debug!("search index: skipping {e}");
                    return Ok(target.is_some());
                }
            };
            let sid = match (target, &read.header) {
                (Some((sid, _)), _) => sid,
                (None, Some(h)) => {
                    tx.execute(
                        "INSERT INTO sessions(path, id, cwd, created, modified_ms, parent_session, version) \
                         VALUES (?1, ?2, ?3, ?4, 0, ?5, ?6)",
                        params![key, h.id, h.cwd, h.timestamp, h.parent_session, h.version],
                    )?;
                    tx.last_insert_rowid()
                }
                (None, None) => return Ok(false), // nothing complete to read yet
            };
            if add_entries(tx, sid, &read.entries, from > 0)? {
                meta_seen = None;
            }
            tx.execute(
                "UPDATE sessions SET size = ?2, mtime_ns = ?3, inode = ?4, read_to = ?5, tail = ?6, modified_ms = ?7 \
                 WHERE sid = ?1",
                params![
                    sid,
                    st.size as i64,
                    st.mtime_ns,
                    st.inode as i64,
                    read.end as i64,
                    tail_at(path, read.end),
                    st.mtime_ns / 1_000_000
                ],
            )?;
            sid
        }
    };
    let id: String = tx.query_row("SELECT id FROM sessions WHERE sid = ?1", [sid], |r| r.get(0))?;
    let mtime = meta_mtime(meta_dir, &id);
    if meta_seen != Some(mtime) {
        set_meta(tx, sid, crate::meta::read(meta_dir, &id).ok().flatten().as_ref(), mtime)?;
    }
    Ok(true)
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
    // By rowid: `sid` is not indexed in the FTS table.
    tx.execute("DELETE FROM fts WHERE rowid IN (SELECT rowid FROM entries WHERE sid = ?1 AND col IS NOT NULL)", [sid])?;
    tx.execute("DELETE FROM fts WHERE rowid = ?1", [-sid])?;
    tx.execute("DELETE FROM entries WHERE sid = ?1", [sid])?;
    tx.execute("DELETE FROM sessions WHERE sid = ?1", [sid])?;
    Ok(())
}

/// An entry's role, and the FTS column its text goes to (on the active
/// branch) with the text, redacted.
fn entry_text(entry: &Entry) -> (&'static str, Option<(&'static str, String)>) {
    let (role, text) = match &entry.kind {
        // Custom messages are extensions' injections (e.g. `@@` context from other sessions).
        EntryKind::Message(m @ AgentMessage::Custom { .. }) => (m.role(), String::new()),
        EntryKind::Message(m) => {
            let items = crate::query::windows::message_items(&entry.id, m);
            (m.role(), items.iter().map(|i| i.text.as_str()).collect::<Vec<_>>().join("\n"))
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
    (role, (!text.trim().is_empty()).then(|| (column, crate::redact::redact(&text).into_owned())))
}

/// Which of `links` (id, parent id, in file order) are on the branch ending
/// at the last one (pi's default leaf); a later duplicate id wins.
fn on_branch(links: &[(String, Option<String>)]) -> Vec<bool> {
    let by_id: HashMap<&str, usize> = links.iter().enumerate().map(|(i, (id, _))| (id.as_str(), i)).collect();
    let mut on = vec![false; links.len()];
    let mut cur = links.len().checked_sub(1);
    while let Some(i) = cur.filter(|&i| !on[i]) {
        on[i] = true;
        cur = links[i].1.as_deref().and_then(|p| by_id.get(p).copied());
    }
    on
}

/// Index entries read from the file; true when one named the session.
fn add_entries(tx: &Transaction<'_>, sid: i64, entries: &[Entry], appended: bool) -> rusqlite::Result<bool> {
    let links: Vec<_> = entries.iter().map(|e| (e.id.clone(), e.parent_id.clone())).collect();
    let leaf: Option<String> = tx
        .query_row("SELECT entry_id FROM entries WHERE sid = ?1 ORDER BY rowid DESC LIMIT 1", [sid], |r| r.get(0))
        .optional()?;
    // Appended entries are placed as active, then the whole session's branch is recomputed.
    let active = if appended { vec![true; entries.len()] } else { on_branch(&links) };
    let (mut messages, mut first_message) = (0i64, None);
    for (entry, &active) in entries.iter().zip(&active) {
        let (role, text) = entry_text(entry);
        if let EntryKind::Message(m) = &entry.kind {
            messages += 1;
            if first_message.is_none() && m.role() == "user" {
                first_message =
                    text.as_ref().map(|(_, t)| crate::text::clip(t, FIRST_MESSAGE_CHARS, crate::text::Keep::Head));
            }
        }
        if let EntryKind::SessionInfo { name } = &entry.kind {
            let name = name.as_deref().map(str::trim).filter(|n| !n.is_empty());
            tx.execute("UPDATE sessions SET session_name = ?2 WHERE sid = ?1", params![sid, name])?;
        }
        let column = text.as_ref().map(|(c, _)| *c);
        tx.prepare_cached(
            "INSERT INTO entries(sid, entry_id, parent_id, role, ts, active, col) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        )?
        .execute(params![sid, entry.id, entry.parent_id, role, entry.timestamp, active, column])?;
        if let Some((column, text)) = text {
            let column = if active { column } else { "abandoned" };
            tx.prepare_cached(&format!("INSERT INTO fts(rowid, {column}, sid) VALUES (?1, ?2, ?3)"))?
                .execute(params![tx.last_insert_rowid(), text, sid])?;
        }
    }
    tx.execute(
        "UPDATE sessions SET message_count = message_count + ?2, first_message = COALESCE(first_message, ?3) \
         WHERE sid = ?1",
        params![sid, messages, first_message],
    )?;
    // An agent run continues the branch: only a jump to another parent moves it.
    let continues = entries.iter().enumerate().all(|(i, e)| match i {
        0 => e.parent_id == leaf,
        _ => e.parent_id.as_deref() == Some(entries[i - 1].id.as_str()),
    });
    if appended && !continues {
        recompute_active(tx, sid)?;
    }
    Ok(entries.iter().any(|e| matches!(e.kind, EntryKind::SessionInfo { .. })))
}

/// After an append the active branch may have moved: flag the entries anew,
/// moving text between its column and `abandoned`.
fn recompute_active(tx: &Transaction<'_>, sid: i64) -> rusqlite::Result<()> {
    type Row = (i64, bool, Option<String>);
    let (mut rows, mut links): (Vec<Row>, Vec<_>) = (Vec::new(), Vec::new());
    let mut stmt =
        tx.prepare_cached("SELECT rowid, active, col, entry_id, parent_id FROM entries WHERE sid = ?1 ORDER BY rowid")?;
    for row in stmt.query_map([sid], |r| Ok(((r.get(0)?, r.get(1)?, r.get(2)?), (r.get(3)?, r.get(4)?))))? {
        let (row, link) = row?;
        rows.push(row);
        links.push(link);
    }
    for ((rowid, was, column), now) in rows.into_iter().zip(on_branch(&links)) {
        if was == now {
            continue;
        }
        tx.execute("UPDATE entries SET active = ?2 WHERE rowid = ?1", params![rowid, now])?;
        if let Some(column) = column {
            let (from, to) = if now { ("abandoned", column.as_str()) } else { (column.as_str(), "abandoned") };
            let text: Option<String> =
                tx.query_row(&format!("SELECT {from} FROM fts WHERE rowid = ?1"), [rowid], |r| r.get(0))?;
            tx.execute("DELETE FROM fts WHERE rowid = ?1", [rowid])?;
            tx.execute(&format!("INSERT INTO fts(rowid, {to}, sid) VALUES (?1, ?2, ?3)"), params![rowid, text, sid])?;
        }
    }
    Ok(())
}

/// The meta fields: the `sessions` columns and the session's meta row in
/// the FTS table (rowid `-sid`), with the file's own name when there is no meta.
fn set_meta(tx: &Transaction<'_>, sid: i64, meta: Option<&SessionMeta>, mtime_ns: i64) -> rusqlite::Result<()> {
    let session_name: Option<String> =
        tx.query_row("SELECT session_name FROM sessions WHERE sid = ?1", [sid], |r| r.get(0))?;
    let name = meta.map(|m| m.name.trim().to_string()).filter(|n| !n.is_empty()).or(session_name);
    let slug = name.as_deref().map(crate::catalog::slug);
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
    tx.execute("DELETE FROM fts WHERE rowid = ?1", [-sid])?;
    let join = |parts: &[&[String]]| {
        red(&parts.iter().flat_map(|p| p.iter().map(String::as_str)).collect::<Vec<_>>().join("\n"))
    };
    let (summary, decisions, files) = match meta {
        Some(m) => {
            let files = m.files.as_ref().map(|f| join(&[&f.read, &f.modified])).unwrap_or_default();
            (red(&format!("{}\n{}", m.description, m.summary)), join(&[&m.decisions, &m.open_tasks]), files)
        }
        None => Default::default(),
    };
    let name_text = [name.as_deref(), slug.as_deref()].into_iter().flatten().collect::<Vec<_>>().join(" ");
    tx.execute(
        "INSERT INTO fts(rowid, name, tags, summary, decisions, files, sid) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![-sid, red(&name_text), red(&tags.join(" ")), summary, decisions, files, sid],
    )?;
    Ok(())
}
