//! Splitting a session file into lines, in bounded memory.
//!
//! Reading ahead on a second thread was tried (the kernel copy is about a
//! fifth of a read): on the 2-vCPU machine of the reader bench it was 8–15%
//! slower than this single buffer, so it is not used.

use std::io::{self, Read};

/// One physical line of a file, without its newline.
pub(crate) struct Line<'b> {
    pub number: u64,
    pub text: &'b [u8],
    pub terminated: bool,
}

/// Reads lines into one growing buffer: no copy per line, memory bounded by
/// the longest line (plus one read chunk).
pub(crate) struct LineReader<R> {
    inner: R,
    buf: Vec<u8>,
    /// Start of the unconsumed bytes.
    start: usize,
    /// End of the bytes read so far.
    end: usize,
    /// Where to resume looking for a newline (bytes before it have none).
    scanned: usize,
    eof: bool,
    number: u64,
    /// The first line is the file's first: a BOM before it is dropped.
    at_file_start: bool,
}

const READ_CHUNK: usize = 256 << 10;
const INITIAL_BUFFER: usize = 1 << 20;

impl<R: Read> LineReader<R> {
    pub fn new(inner: R) -> Self {
        LineReader {
            inner,
            buf: vec![0; INITIAL_BUFFER],
            start: 0,
            end: 0,
            scanned: 0,
            eof: false,
            number: 0,
            at_file_start: true,
        }
    }

    /// Lines from the middle of a file (`inner` starts at a line start), the
    /// first numbered `after + 1`.
    pub fn continuing(inner: R, after: u64) -> Self {
        LineReader { number: after, at_file_start: false, ..LineReader::new(inner) }
    }

    /// The number of the last line returned (0 before any).
    pub fn last_number(&self) -> u64 {
        self.number
    }

    pub fn next_line(&mut self) -> io::Result<Option<Line<'_>>> {
        self.next_line_observed(|_, _| {})
    }

    /// [`LineReader::next_line`], showing `observe` the number and the part read so far of the line
    /// after each read that does not finish it: a long line can be worked on
    /// while the bytes just read are still in cache.
    pub fn next_line_observed(&mut self, mut observe: impl FnMut(u64, &[u8])) -> io::Result<Option<Line<'_>>> {
        loop {
            if let Some(i) = memchr::memchr(b'\n', &self.buf[self.scanned..self.end]) {
                let nl = self.scanned + i;
                return Ok(Some(self.take(nl, true)));
            }
            if self.eof {
                if self.start == self.end {
                    return Ok(None);
                }
                let end = self.end;
                return Ok(Some(self.take(end, false)));
            }
            if self.scanned != self.end {
                self.scanned = self.end;
                let first = self.at_file_start && self.number == 0;
                observe(self.number + 1, strip_bom(first, &self.buf[self.start..self.end]));
            }
            // Compact only when the free tail runs short, so a long line is
            // moved at most once per buffer-full rather than once per read.
            if self.buf.len() - self.end < READ_CHUNK {
                if self.start > 0 {
                    self.buf.copy_within(self.start..self.end, 0);
                    self.end -= self.start;
                    self.scanned -= self.start;
                    self.start = 0;
                }
                if self.buf.len() - self.end < READ_CHUNK {
                    let grown = (self.buf.len() * 2).max(self.end + READ_CHUNK);
                    self.buf.resize(grown, 0);
                }
            }
            let n = loop {
                match self.inner.read(&mut self.buf[self.end..self.end + READ_CHUNK]) {
                    Ok(n) => break n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(e),
                }
            };
            if n == 0 {
                self.eof = true;
            }
            self.end += n;
        }
    }

    fn take(&mut self, line_end: usize, terminated: bool) -> Line<'_> {
        let from = self.start;
        self.start = if terminated { line_end + 1 } else { line_end };
        self.scanned = self.start;
        let first = self.at_file_start && self.number == 0;
        self.number += 1;
        let text = strip_bom(first, &self.buf[from..line_end]);
        Line { number: self.number, text, terminated }
    }
}

/// JavaScript's `trim()` drops a leading BOM, so pi reads such files.
fn strip_bom(first: bool, text: &[u8]) -> &[u8] {
    if first {
        text.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(text)
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hands out at most `step` bytes per read, to cross every buffer boundary.
    struct Trickle<'a> {
        data: &'a [u8],
        step: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            let n = self.step.min(out.len()).min(self.data.len());
            out[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }

    fn lines(data: &[u8], step: usize) -> Vec<(Vec<u8>, bool)> {
        let mut r = LineReader::new(Trickle { data, step });
        let mut out = Vec::new();
        while let Some(l) = r.next_line().unwrap() {
            out.push((l.text.to_vec(), l.terminated));
        }
        out
    }

    #[test]
    fn lines_survive_any_read_size() {
        let long = vec![b'x'; READ_CHUNK * 3 + 17];
        let mut data = b"\xEF\xBB\xBFfirst\n\nsecond\n".to_vec();
        data.extend_from_slice(&long);
        data.extend_from_slice(b"\nlast-unterminated");
        let want = vec![
            (b"first".to_vec(), true),
            (Vec::new(), true),
            (b"second".to_vec(), true),
            (long.clone(), true),
            (b"last-unterminated".to_vec(), false),
        ];
        for step in [1, 7, 4096, usize::MAX] {
            if step == 1 {
                // One byte per read over 3 MiB is slow in debug builds; the small
                // steps are covered on the short prefix.
                assert_eq!(lines(&data[..17], step), want[..3].to_vec());
                continue;
            }
            assert_eq!(lines(&data, step), want, "step {step}");
        }
        assert!(lines(b"", 10).is_empty());
        assert_eq!(lines(b"a\n", 10), vec![(b"a".to_vec(), true)]);
    }

    #[test]
    fn observers_see_each_unfinished_line_grow() {
        let long = vec![b'y'; READ_CHUNK * 2 + 5];
        let mut data = b"\xEF\xBB\xBF".to_vec();
        data.extend_from_slice(&long);
        data.extend_from_slice(b"\nshort\n");
        data.extend_from_slice(&long);
        let mut r = LineReader::new(Trickle { data: &data, step: 4096 });
        let mut seen: Vec<(u64, usize)> = Vec::new();
        let mut ends = Vec::new();
        loop {
            let line = r
                .next_line_observed(|number, partial| {
                    assert!(long.starts_with(partial), "line {number}: not a prefix of the line");
                    seen.push((number, partial.len()));
                })
                .unwrap();
            let Some(line) = line else { break };
            ends.push((line.number, line.text.len()));
        }
        assert_eq!(ends, vec![(1, long.len()), (2, 5), (3, long.len())]);
        for number in [1, 3] {
            let sizes: Vec<usize> = seen.iter().filter(|(n, _)| *n == number).map(|(_, len)| *len).collect();
            // At least once per read chunk, always growing, never past it.
            assert!(sizes.len() >= 2, "line {number}: {sizes:?}");
            assert!(sizes.windows(2).all(|w| w[0] < w[1]) && sizes.iter().all(|&l| l <= long.len()));
        }
        assert!(!seen.iter().any(|(n, _)| *n == 2));
    }
}
