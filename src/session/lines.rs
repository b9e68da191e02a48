//! Splitting a session file into lines from any byte offset: pi only ever
//! appends, so a reader that remembers [`LineReader::offset`] can later read
//! just the new lines.
//!
//! Memory is bounded whatever the file holds. A line up to [`LONG_LINE`] is
//! held whole. Past that, the line is cut as it is read: each JSON string
//! longer than [`KEEP`] keeps a head and a [`Cut`] records what was dropped,
//! so a 300 MB message costs its head, not 300 MB. A line whose kept part
//! still grows past [`LONG_LINE`] (millions of small values, not one long
//! string) is read past without being held ([`Skipped::Oversized`]), and so
//! is one whose dropped text is not valid JSON string text
//! ([`Skipped::Invalid`]: `JSON.parse` would fail it, so pi drops it too).

use std::io::{self, Read, Seek, SeekFrom};

/// One physical line of a file, without its newline.
pub(crate) struct Line<'b> {
    pub text: &'b [u8],
    pub terminated: bool,
    /// The strings of `text` cut short (only in lines longer than [`LONG_LINE`]).
    pub cuts: &'b [Cut],
    /// Why the line was read past without its text (`text` is then empty).
    pub skipped: Option<Skipped>,
}

/// Why a line was read past instead of held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Skipped {
    /// A dropped string held a control character or a bad escape: the line is malformed.
    Invalid,
    /// Even cut, the line stayed longer than [`LONG_LINE`].
    Oversized,
}

/// A JSON string of a long line of which only the first [`KEEP`] bytes of
/// JSON text were kept.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Cut {
    /// Offset in the line of the string's first byte after its opening quote.
    pub at: usize,
    /// UTF-16 units and UTF-8 bytes of the text dropped.
    pub units: usize,
    pub bytes: usize,
}

/// Lines up to this length are read whole; a cut line is held up to this length.
pub const LONG_LINE: usize = 8 << 20;
/// JSON text kept of a string cut short: more than any reader decodes of a
/// string it bounds (`convert::bounded_json`).
pub(crate) const KEEP: usize = 64 << 10;

/// Where cutting the current long line stands.
#[derive(Default)]
struct Squeeze {
    /// Bytes of the line (from its start) already cut: the reader resumes there.
    done: usize,
    /// Inside a string: the offset in the line of its first byte.
    string: Option<usize>,
    /// The current string is being dropped (its [`Cut`] is the last one).
    dropping: bool,
    /// Bytes dropped from the line so far.
    dropped: usize,
    /// The rest of the line is read past, not held.
    skip: Option<Skipped>,
}

/// Reads lines into one buffer (no copy per line). The buffer only grows by
/// what a line needs and is filled without zeroing ahead, so the resident
/// memory of a long line is what is kept of it.
pub(crate) struct LineReader<R> {
    inner: R,
    buf: Vec<u8>,
    /// Start of the unconsumed bytes of `buf`.
    start: usize,
    /// Where to resume looking for a newline (bytes before it have none).
    scanned: usize,
    eof: bool,
    /// File offset just after the last complete (newline-terminated) line returned.
    offset: u64,
    squeeze: Option<Squeeze>,
    cuts: Vec<Cut>,
    /// Bytes asked of `inner` per read.
    read_size: usize,
}

const READ_CHUNK: usize = 256 << 10;

impl<R: Read + Seek> LineReader<R> {
    /// Lines of `inner` from byte `offset` (a line start). At offset 0 a
    /// byte-order mark is dropped, as JavaScript's `trim()` drops it for pi.
    pub fn from_offset(mut inner: R, offset: u64) -> io::Result<Self> {
        if offset > 0 {
            inner.seek(SeekFrom::Start(offset))?;
        }
        let mut reader = LineReader {
            inner,
            buf: Vec::new(),
            start: 0,
            scanned: 0,
            eof: false,
            offset,
            squeeze: None,
            cuts: Vec::new(),
            read_size: READ_CHUNK,
        };
        if offset == 0 {
            reader.fill()?;
            while reader.buf.len() < 3 && !reader.eof {
                reader.fill()?;
            }
            if reader.buf.starts_with(b"\xEF\xBB\xBF") {
                reader.start = 3;
                reader.scanned = 3;
                reader.offset = 3;
            }
        }
        Ok(reader)
    }

    /// The file offset after the last complete line returned: where a later
    /// read resumes (an unterminated last line is read again then).
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Read `bytes` at a time (256 KiB unless told): a reader that picks a
    /// few lines out of a file ([`skip_to`](Self::skip_to)) reads less past
    /// the last one with smaller reads.
    pub fn with_read_size(mut self, bytes: usize) -> Self {
        self.read_size = bytes.max(1);
        self
    }

    /// Go on at byte `offset`, a line start at or after
    /// [`offset`](Self::offset): the lines between are not returned, and
    /// not read unless they are in the buffer already. Only between lines
    /// (after a complete line, not inside a long one being cut).
    pub fn skip_to(&mut self, offset: u64) -> io::Result<()> {
        let Some(ahead) = offset.checked_sub(self.offset) else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("cannot skip back from byte {} to {offset}", self.offset),
            ));
        };
        if ahead == 0 {
            return Ok(());
        }
        let buffered = self.buf.len() - self.start;
        match usize::try_from(ahead) {
            Ok(ahead) if ahead <= buffered => self.start += ahead,
            _ => {
                self.inner.seek(SeekFrom::Start(offset))?;
                self.buf.clear();
                self.start = 0;
                self.eof = false;
            }
        }
        self.scanned = self.start;
        self.offset = offset;
        Ok(())
    }

    pub fn next_line(&mut self) -> io::Result<Option<Line<'_>>> {
        self.cuts.clear();
        loop {
            if let Some(i) = memchr::memchr(b'\n', &self.buf[self.scanned..]) {
                let nl = self.scanned + i;
                let shift = self.cut(nl);
                return Ok(Some(self.take(nl - shift, true)));
            }
            if self.eof {
                if self.start == self.buf.len() {
                    return Ok(None);
                }
                self.cut(self.buf.len());
                return Ok(Some(self.take(self.buf.len(), false)));
            }
            if self.buf.len() - self.start > LONG_LINE {
                self.squeeze.get_or_insert_default();
            }
            self.cut(self.buf.len());
            self.scanned = self.buf.len();
            self.fill()?;
        }
    }

    /// Cut the strings of the current line up to `end` (when it is a long
    /// line), moving the bytes after `end` back: returns by how much.
    fn cut(&mut self, end: usize) -> usize {
        let Some(mut sq) = self.squeeze.take() else {
            return 0;
        };
        let (r, w) = match sq.skip {
            Some(_) => (end, self.start),
            None => self.cut_strings(&mut sq, end),
        };
        let b = &mut self.buf;
        let len = b.len();
        b.copy_within(r..len, w);
        b.truncate(len - (r - w));
        sq.done = w - self.start;
        sq.dropped += r - w;
        if sq.skip.is_none() && sq.done > LONG_LINE {
            // Even cut, the line is too long to hold: drop what was kept too.
            sq.skip = Some(Skipped::Oversized);
            sq.dropped += sq.done;
            let from = self.start + sq.done;
            self.buf.copy_within(from.., self.start);
            self.buf.truncate(self.buf.len() - sq.done);
            sq.done = 0;
            self.cuts.clear();
            self.squeeze = Some(sq);
            return r - w + (from - self.start);
        }
        self.squeeze = Some(sq);
        r - w
    }

    /// Compact the strings of `buf[start + sq.done..end]` in place: returns
    /// how far it read (`r`) and wrote (`w`). Sets `sq.skip` when dropped
    /// text is not valid JSON string text (the rest is then read past).
    fn cut_strings(&mut self, sq: &mut Squeeze, end: usize) -> (usize, usize) {
        let (mut r, mut w) = (self.start + sq.done, self.start + sq.done);
        let b = &mut self.buf;
        while r < end {
            let Some(open) = sq.string else {
                // Outside strings: up to and including the next quote.
                let next = memchr::memchr(b'"', &b[r..end]).map_or(end, |k| r + k + 1);
                b.copy_within(r..next, w);
                (w, r) = (w + next - r, next);
                sq.string = (b[w - 1] == b'"').then_some(w - self.start);
                continue;
            };
            let next = memchr::memchr2(b'"', b'\\', &b[r..end]).map_or(end, |k| r + k);
            if !sq.dropping {
                let room = (open + KEEP).saturating_sub(w - self.start);
                let mut keep = next.min(r + room);
                while keep > r && keep < next && b[keep] & 0xC0 == 0x80 {
                    keep -= 1;
                }
                let kept = keep - r;
                b.copy_within(r..keep, w);
                (w, r) = (w + kept, keep);
                if keep < next || (kept == room && r < end && b[r] == b'\\') {
                    sq.dropping = true;
                    self.cuts.push(Cut {
                        at: open,
                        units: 0,
                        bytes: 0,
                    });
                }
                if keep < next {
                    continue;
                }
            } else {
                // Dropped text is measured, and must be valid JSON string text.
                let Some((units, bytes, read)) = measure(&b[r..next], next == end) else {
                    sq.skip = Some(Skipped::Invalid);
                    return (end, w);
                };
                if let Some(cut) = self.cuts.last_mut() {
                    (cut.units, cut.bytes) = (cut.units + units, cut.bytes + bytes);
                }
                r += read;
                if r < next {
                    break;
                }
            }
            if r == end {
                break;
            }
            if b[r] == b'"' {
                b[w] = b'"';
                (w, r, sq.string, sq.dropping) = (w + 1, r + 1, None, false);
                continue;
            }
            // An escape: kept or dropped whole, once all of it is read.
            let len = if b.get(r + 1) == Some(&b'u') { 6 } else { 2 };
            if r + len > end {
                break;
            }
            if sq.dropping {
                let Some((_, units, bytes)) = super::convert::escape(&b[r..r + len]) else {
                    sq.skip = Some(Skipped::Invalid);
                    return (end, w);
                };
                if let Some(cut) = self.cuts.last_mut() {
                    (cut.units, cut.bytes) = (cut.units + units, cut.bytes + bytes);
                }
            } else {
                b.copy_within(r..r + len, w);
                w += len;
            }
            r += len;
        }
        (r, w)
    }

    /// Read one more chunk after the unconsumed bytes.
    fn fill(&mut self) -> io::Result<()> {
        // Move the unconsumed bytes to the front only once they are at most
        // half the buffer: a long line is then moved O(1) times, not once a read.
        if self.start > 0
            && self.buf.capacity() - self.buf.len() < self.read_size
            && self.start >= self.buf.len() / 2
        {
            self.buf.drain(..self.start);
            self.scanned -= self.start;
            self.start = 0;
        }
        self.buf.reserve(self.read_size);
        let n = loop {
            match (&mut self.inner)
                .take(self.read_size as u64)
                .read_to_end(&mut self.buf)
            {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                r => break r?,
            }
        };
        self.eof = n == 0;
        Ok(())
    }

    fn take(&mut self, line_end: usize, terminated: bool) -> Line<'_> {
        let (dropped, skipped) = self
            .squeeze
            .take()
            .map_or((0, None), |sq| (sq.dropped, sq.skip));
        let from = self.start;
        self.start = if terminated { line_end + 1 } else { line_end };
        self.scanned = self.start;
        if terminated {
            self.offset += (self.start - from + dropped) as u64;
        }
        let text = match skipped {
            Some(_) => &self.buf[from..from],
            None => &self.buf[from..line_end],
        };
        Line {
            text,
            terminated,
            cuts: &self.cuts,
            skipped,
        }
    }
}

/// The UTF-16 units and UTF-8 bytes of dropped string text (up to a quote or
/// a backslash), as JavaScript would hold it, and how many bytes of it were
/// measured (a character split by the end of what was read so far, when
/// `at_end`, waits for the next read). `None` for a control character,
/// which `JSON.parse` rejects. Invalid UTF-8 counts as pi's decoder reads
/// it: one U+FFFD (1 unit, 3 bytes) per bad sequence.
fn measure(text: &[u8], at_end: bool) -> Option<(usize, usize, usize)> {
    if text.iter().any(|&c| c < 0x20) {
        return None;
    }
    let (mut units, mut bytes, mut at) = (0, 0, 0);
    loop {
        match std::str::from_utf8(&text[at..]) {
            Ok(valid) => {
                return Some((
                    units + super::convert::utf16_len(valid),
                    bytes + valid.len(),
                    text.len(),
                ))
            }
            Err(e) => {
                let valid = &text[at..at + e.valid_up_to()];
                // Valid UTF-8 by `valid_up_to`.
                let valid = std::str::from_utf8(valid).unwrap_or_default();
                units += super::convert::utf16_len(valid);
                bytes += valid.len();
                at += e.valid_up_to();
                match e.error_len() {
                    Some(bad) => {
                        (units, bytes, at) = (units + 1, bytes + 3, at + bad);
                    }
                    None if at_end => return Some((units, bytes, at)),
                    None => return Some((units + 1, bytes + 3, text.len())),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    fn lines(data: &[u8], offset: u64) -> (Vec<(Vec<u8>, bool)>, u64) {
        let mut r = LineReader::from_offset(Cursor::new(data), offset).unwrap();
        let mut out = Vec::new();
        while let Some(l) = r.next_line().unwrap() {
            out.push((l.text.to_vec(), l.terminated));
        }
        (out, r.offset())
    }

    /// Skipping to a line start reads from there, inside the buffer or past
    /// it (then the bytes between are never read); skipping back is refused.
    #[test]
    fn skips_read_from_the_line_skipped_to() {
        let mut data = Vec::new();
        let mut starts = Vec::new();
        for i in 0..40 {
            starts.push(data.len() as u64);
            data.extend_from_slice(format!("line {i} {}\n", "y".repeat(i * 7)).as_bytes());
        }
        let read = |size: usize, picks: &[usize]| -> Vec<(u64, String)> {
            let mut r = LineReader::from_offset(Cursor::new(&data), starts[1])
                .unwrap()
                .with_read_size(size);
            let mut got = Vec::new();
            for &i in picks {
                r.skip_to(starts[i]).unwrap();
                let start = r.offset();
                let line = r.next_line().unwrap().unwrap();
                assert!(line.terminated);
                got.push((start, String::from_utf8(line.text.to_vec()).unwrap()));
            }
            assert!(r.skip_to(starts[1]).is_err());
            got
        };
        let picks = [1, 2, 5, 6, 20, 39];
        let want: Vec<(u64, String)> = picks
            .iter()
            .map(|&i| (starts[i], format!("line {i} {}", "y".repeat(i * 7))))
            .collect();
        // Reads smaller than a line, of a few lines, and of the whole file.
        for size in [5, 64, 1 << 20] {
            assert_eq!(read(size, &picks), want, "read size {size}");
        }
    }

    #[test]
    fn lines_and_offsets_survive_long_lines_and_resumes() {
        let long = vec![b'x'; READ_CHUNK * 3 + 17];
        let mut data = b"\xEF\xBB\xBFfirst\n\nsecond\n".to_vec();
        data.extend_from_slice(&long);
        data.extend_from_slice(b"\nlast-unterminated");
        let (got, offset) = lines(&data, 0);
        let want = vec![
            (b"first".to_vec(), true),
            (Vec::new(), true),
            (b"second".to_vec(), true),
            (long.clone(), true),
            (b"last-unterminated".to_vec(), false),
        ];
        assert_eq!(got, want);
        // The offset stops after the last complete line; resuming there reads the rest.
        assert_eq!(offset as usize, data.len() - b"last-unterminated".len());
        assert_eq!(lines(&data, offset).0, want[4..].to_vec());
        assert_eq!(lines(&data, 9).0, want[1..].to_vec());
        assert!(lines(b"", 0).0.is_empty());
        assert_eq!(lines(b"a\n", 0), (vec![(b"a".to_vec(), true)], 2));
    }

    /// A long line's long strings are cut to [`KEEP`] bytes of JSON text (on
    /// a character and escape boundary), with the lengths of what was
    /// dropped; offsets stay those of the file.
    #[test]
    fn long_lines_are_cut() {
        let piece = r#"plain é 日本 😀 \n \" \u00e9 \\u0041 "#;
        let body = piece.repeat((LONG_LINE / 2 + (1 << 20)) / piece.len());
        let long = format!(r#"{{"a":"{body}","b":["{body}", 1]}}"#);
        let data = format!("head\n{long}\nlast\n");
        let mut r = LineReader::from_offset(Cursor::new(data.as_bytes()), 0).unwrap();
        assert_eq!(r.next_line().unwrap().unwrap().text, b"head");
        let line = r.next_line().unwrap().unwrap();
        assert_eq!(line.skipped, None);
        let (text, cuts) = (
            String::from_utf8(line.text.to_vec()).unwrap(),
            line.cuts.to_vec(),
        );
        let full: String = serde_json::from_str(&format!("\"{body}\"")).unwrap();
        assert_eq!(cuts.len(), 2);
        for cut in &cuts {
            let mut string = serde_json::Deserializer::from_str(&text[cut.at - 1..]);
            let kept =
                <&serde_json::value::RawValue as serde::Deserialize>::deserialize(&mut string)
                    .unwrap()
                    .get();
            let head: String = serde_json::from_str(kept).unwrap();
            let kept = &kept[1..kept.len() - 1];
            assert!(
                body.starts_with(kept) && kept.len().abs_diff(KEEP) < 6,
                "{}",
                kept.len()
            );
            assert_eq!(head.len() + cut.bytes, full.len());
            assert_eq!(
                head.encode_utf16().count() + cut.units,
                full.encode_utf16().count()
            );
        }
        assert_eq!(r.offset(), ("head\n".len() + long.len() + 1) as u64);
        assert_eq!(r.next_line().unwrap().unwrap().text, b"last");
        assert_eq!(lines(data.as_bytes(), r.offset()).0, []);
    }

    /// A long line is never held whole: one of many small values (that no
    /// string cut can shorten) and one whose dropped text has a control
    /// character are read past, and the next line is read as usual.
    #[test]
    fn lines_too_long_even_cut_or_invalid_are_read_past() {
        let small_values = format!("[{}1]", "1,".repeat(2 * LONG_LINE));
        let control = format!(
            r#"{{"a":"{}\u{{1}}{}"}}"#,
            "x".repeat(LONG_LINE),
            "y".repeat(1 << 20)
        );
        for (long, why) in [
            (small_values, Skipped::Oversized),
            (control, Skipped::Invalid),
        ] {
            let data = format!("head\n{long}\nlast");
            let mut r = LineReader::from_offset(Cursor::new(data.as_bytes()), 0).unwrap();
            assert_eq!(r.next_line().unwrap().unwrap().text, b"head");
            let line = r.next_line().unwrap().unwrap();
            assert_eq!(
                (line.skipped, line.text, line.terminated),
                (Some(why), &b""[..], true)
            );
            assert!(
                r.buf.capacity() <= 2 * LONG_LINE + 2 * READ_CHUNK,
                "{}",
                r.buf.capacity()
            );
            assert_eq!(r.offset(), ("head\n".len() + long.len() + 1) as u64);
            let last = r.next_line().unwrap().unwrap();
            assert_eq!(
                (last.text, last.terminated, last.skipped),
                (&b"last"[..], false, None)
            );
        }
    }

    #[test]
    fn dropped_text_is_measured_as_javascript_holds_it() {
        assert_eq!(measure("aé😀".as_bytes(), false), Some((4, 7, 7)));
        assert_eq!(measure(b"a\xffb", false), Some((3, 5, 3)));
        // A character split by the end of what was read waits for the rest.
        assert_eq!(measure(&"aé".as_bytes()[..2], true), Some((1, 1, 1)));
        assert_eq!(measure(b"a\x01", false), None);
    }
}
