//! Splitting a session file into lines from any byte offset, in memory
//! bounded by the longest line: pi only ever appends, so a reader that
//! remembers [`LineReader::offset`] can later read just the new lines.

use std::io::{self, Read, Seek, SeekFrom};

/// One physical line of a file, without its newline.
pub(crate) struct Line<'b> {
    /// 1-based, counted from the offset the reader started at.
    pub number: u64,
    pub text: &'b [u8],
    pub terminated: bool,
}

/// Reads lines into one buffer (no copy per line). The buffer only grows by
/// what a line needs and is filled without zeroing ahead, so the resident
/// memory of a long line is that line.
pub(crate) struct LineReader<R> {
    inner: R,
    buf: Vec<u8>,
    /// Start of the unconsumed bytes of `buf`.
    start: usize,
    /// Where to resume looking for a newline (bytes before it have none).
    scanned: usize,
    eof: bool,
    number: u64,
    /// File offset just after the last complete (newline-terminated) line returned.
    offset: u64,
}

const READ_CHUNK: usize = 256 << 10;

impl<R: Read + Seek> LineReader<R> {
    /// Lines of `inner` from byte `offset` (a line start). At offset 0 a
    /// byte-order mark is dropped, as JavaScript's `trim()` drops it for pi.
    pub fn from_offset(mut inner: R, offset: u64) -> io::Result<Self> {
        if offset > 0 {
            inner.seek(SeekFrom::Start(offset))?;
        }
        let mut reader = LineReader { inner, buf: Vec::new(), start: 0, scanned: 0, eof: false, number: 0, offset };
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
}

impl<R: Read> LineReader<R> {
    /// The file offset after the last complete line returned: where a later
    /// read resumes (an unterminated last line is read again then).
    pub fn offset(&self) -> u64 {
        self.offset
    }

    pub fn next_line(&mut self) -> io::Result<Option<Line<'_>>> {
        loop {
            if let Some(i) = memchr::memchr(b'\n', &self.buf[self.scanned..]) {
                let nl = self.scanned + i;
                return Ok(Some(self.take(nl, true)));
            }
            if self.eof {
                if self.start == self.buf.len() {
                    return Ok(None);
                }
                return Ok(Some(self.take(self.buf.len(), false)));
            }
            self.scanned = self.buf.len();
            self.fill()?;
        }
    }

    /// Read one more chunk after the unconsumed bytes.
    fn fill(&mut self) -> io::Result<()> {
        // Move the unconsumed bytes to the front only once they are at most
        // half the buffer: a long line is then moved O(1) times, not once a read.
        if self.start > 0 && self.buf.capacity() - self.buf.len() < READ_CHUNK && self.start >= self.buf.len() / 2 {
            self.buf.drain(..self.start);
            self.scanned -= self.start;
            self.start = 0;
        }
        self.buf.reserve(READ_CHUNK);
        let n = loop {
            match (&mut self.inner).take(READ_CHUNK as u64).read_to_end(&mut self.buf) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                r => break r?,
            }
        };
        self.eof = n == 0;
        Ok(())
    }

    fn take(&mut self, line_end: usize, terminated: bool) -> Line<'_> {
        let from = self.start;
        self.start = if terminated { line_end + 1 } else { line_end };
        self.scanned = self.start;
        self.number += 1;
        if terminated {
            self.offset += (self.start - from) as u64;
        }
        Line { number: self.number, text: &self.buf[from..line_end], terminated }
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
}
