//! The light scan of a session file: its header, latest `session_info` name
//! and first user message. A cold catalog scans every session file, so the
//! scan reads in large chunks into a reused buffer, looks for the only lines
//! that can matter with a substring search over the whole chunk, and parses
//! just those lines (header and `session_info` lines field by field, without
//! building a JSON tree). The result is the same as parsing line by line: a
//! line is read only if it contains `"user"` (until the first user message is
//! found) or `"session_info"`, and the last `session_info` line wins.

use std::borrow::Cow;
use std::fs::File;
use std::io::{Seek, SeekFrom};
use std::path::Path;

use memchr::memmem;

use super::fields::top_fields;
use super::scan::{read_retrying, Stamp};

/// Longest first message kept in memory (chars); enough to match and preview.
const FIRST_MESSAGE_CHARS: usize = 300;
/// Bytes asked for per read (a longer line grows the buffer).
const CHUNK: usize = 256 * 1024;
/// A buffer grown past this (by a huge line) is not kept for the next file.
const KEEP_BUFFER: usize = 4 * CHUNK;

thread_local! {
    static BUF: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// What the catalog keeps of a session file.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Light {
    pub id: String,
    pub cwd: String,
    pub created: String,
    pub parent_session: Option<String>,
    /// Latest `session_info` name; an empty name clears it, as in pi.
    pub name: Option<String>,
    pub first_message: Option<String>,
    /// Bytes consumed up to the end of the last complete line, so appends
    /// (pi only ever appends) are scanned from there.
    pub scanned_to: u64,
}

/// Scan a session file, continuing from `prev` when the file only grew.
/// `Ok(None)`: not a pi session file (no session header).
/// Also returns the file's stamp, taken from the open file (one `fstat`).
pub(crate) fn read_session(path: &Path, prev: Option<&Light>) -> std::io::Result<(Stamp, Option<Light>)> {
    let mut file = regular_files::open_regular(path)?;
    let stamp = Stamp::of(&file.metadata()?);
    let light = match prev {
        Some(p) if stamp.len >= p.scanned_to && p.scanned_to > 0 => {
            file.seek(SeekFrom::Start(p.scanned_to))?;
            p.clone()
        }
        _ => Light::default(),
    };
    let remaining = stamp.len.saturating_sub(light.scanned_to);
    let mut buf = BUF.with(|b| b.take());
    let out = scan(&mut file, light, remaining, &mut buf);
    if buf.capacity() <= KEEP_BUFFER {
        BUF.with(|b| b.set(buf));
    }
    Ok((stamp, out?))
}

fn scan(file: &mut File, mut light: Light, size: u64, buf: &mut Vec<u8>) -> std::io::Result<Option<Light>> {
    buf.clear();
    let size = usize::try_from(size).unwrap_or(usize::MAX);
    // The first read asks for one byte more than the file has, to see the end.
    let mut ask = size.min(CHUNK).saturating_add(1);
    let mut total = 0usize;
    loop {
        let old = buf.len();
        buf.resize(old + ask, 0);
        let n = read_retrying(file, &mut buf[old..]);
        buf.truncate(old + *n.as_ref().unwrap_or(&0));
        let n = n?;
        total += n;
        // A short read once the whole file (as of the fstat) is in is the end;
        // bytes appended meanwhile change its stamp and are read next time.
        let eof = n == 0 || (n < ask && total >= size);
        ask = CHUNK;
        match scan_chunk(buf, &mut light, eof) {
            Step::NotSession => return Ok(None),
            Step::Done => break,
            Step::More(consumed) => {
                buf.drain(..consumed);
            }
        }
    }
    if light.id.is_empty() {
        return Ok(None);
    }
    Ok(Some(light))
}

enum Step {
    NotSession,
    Done,
    /// Bytes fully handled (complete lines); read more.
    More(usize),
}

/// Handle the complete lines of `data` (and, at the end of the file, the
/// last line without its newline: looked at now, scanned again after the
/// next append, as it may still be being written).
fn scan_chunk(data: &[u8], light: &mut Light, eof: bool) -> Step {
    let mut pos = 0;
    if light.scanned_to == 0 && light.id.is_empty() {
        let (line, complete) = match memchr::memchr(b'\n', data) {
            Some(i) => (&data[..=i], true),
            None if eof => (data, false),
            None => return Step::More(0),
        };
        if line.is_empty() {
            return Step::Done;
        }
        let Some(h) = parse_header(line) else { return Step::NotSession };
        light.id = h.id;
        light.cwd = h.cwd;
        light.created = h.created;
        light.parent_session = h.parent_session;
        if !complete {
            return Step::Done;
        }
        light.scanned_to += line.len() as u64;
        pos = line.len();
    }
    let end = if eof { data.len() } else { memchr::memrchr(b'\n', &data[pos..]).map_or(pos, |i| pos + i + 1) };
    let region = &data[pos..end];
    scan_region(region, light);
    let complete = memchr::memrchr(b'\n', region).map_or(0, |i| i + 1);
    light.scanned_to += complete as u64;
    if eof {
        Step::Done
    } else {
        Step::More(pos + complete)
    }
}

/// The line around byte `at`: (start, end without the newline).
fn line_at(region: &[u8], at: usize) -> (usize, usize) {
    let start = memchr::memrchr(b'\n', &region[..at]).map_or(0, |i| i + 1);
    let end = memchr::memchr(b'\n', &region[at..]).map_or(region.len(), |i| at + i);
    (start, end)
}

fn scan_region(region: &[u8], light: &mut Light) {
    // A session_info line found while looking for the first user message
    // (a line is parsed once, whatever made it interesting).
    let mut info: Option<(usize, Option<String>)> = None;
    if light.first_message.is_none() {
        let mut from = 0;
        while let Some(i) = memmem::find(&region[from..], b"\"user\"") {
            let (start, end) = line_at(region, from + i);
            from = end;
            match parse_line(&region[start..end]) {
                Some(Line::Info(name)) => info = Some((start, name)),
                Some(Line::User(text)) => {
                    light.first_message = Some(text);
                    break;
                }
                None => {}
            }
        }
    }
    let mut to = region.len();
    while let Some(i) = memmem::rfind(&region[..to], b"\"session_info\"") {
        let (start, end) = line_at(region, i);
        to = start;
        if info.as_ref().is_some_and(|(at, _)| *at >= start) {
            break;
        }
        if let Some(name) = parse_info(&region[start..end]) {
            info = Some((start, name));
            break;
        }
    }
    if let Some((_, name)) = info {
        light.name = name;
    }
}

enum Line {
    /// A `session_info` entry's name (`None`: cleared).
    Info(Option<String>),
    /// The first user message's text (non-empty, capped).
    User(String),
}

/// A line that may hold a user message (it mentions `"user"`).
fn parse_line(line: &[u8]) -> Option<Line> {
    let f = top_fields(line)?;
    match f.ty.as_deref() {
        Some("session_info") => Some(Line::Info(info_name(f.name.as_deref()))),
        Some("message") => {
            let msg = f.message?;
            if msg.role.as_deref() != Some("user") {
                return None;
            }
            let text = msg.content.text();
            let text = text.trim();
            (!text.is_empty()).then(|| Line::User(text.chars().take(FIRST_MESSAGE_CHARS).collect()))
        }
        _ => None,
    }
}

fn info_name(name: Option<&str>) -> Option<String> {
    let name = name.map(str::trim).unwrap_or_default();
    (!name.is_empty()).then(|| name.to_string())
}

/// `Some(name)` when the line is a `session_info` entry.
fn parse_info(line: &[u8]) -> Option<Option<String>> {
    let f = top_fields(line)?;
    (f.ty.as_deref() == Some("session_info")).then(|| info_name(f.name.as_deref()))
}

struct Header {
    id: String,
    cwd: String,
    created: String,
    parent_session: Option<String>,
}

fn parse_header(line: &[u8]) -> Option<Header> {
    let f = top_fields(line)?;
    if f.ty.as_deref()? != "session" {
        return None;
    }
    let id = f.id?.into_owned();
    if id.is_empty() {
        return None;
    }
    let s = |v: Option<Cow<'_, str>>| v.map(Cow::into_owned).unwrap_or_default();
    let parent = f.parent_session.filter(|p| !p.is_empty()).map(Cow::into_owned);
    Some(Header { id, cwd: s(f.cwd), created: s(f.timestamp), parent_session: parent })
}

#[cfg(test)]
#[path = "light_tests.rs"]
mod tests;
