//! Splitting a session file into lines, in bounded memory.
//!
//! [`LineReader`] reads into one growing buffer on the calling thread.
//! [`Lines::open`] uses it for small files; for large ones a second thread
//! ([`ReadAhead`]) reads, splits and prepares lines ahead of the parser, so
//! copying the file out of the kernel and measuring its large strings (see
//! `super::elide`), about half the work, overlap with parsing instead of
//! adding to it.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;
use std::sync::mpsc::{self, Receiver, SyncSender};

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
}

const READ_CHUNK: usize = 1 << 20;
const INITIAL_BUFFER: usize = 4 << 20;

impl<R: Read> LineReader<R> {
    pub fn new(inner: R) -> Self {
        LineReader { inner, buf: vec![0; INITIAL_BUFFER], start: 0, end: 0, scanned: 0, eof: false, number: 0 }
    }

    pub fn next_line(&mut self) -> io::Result<Option<Line<'_>>> {
        loop {
            if let Some(i) = memchr::memchr(b'\n', &self.buf[self.scanned..self.end]) {
                let nl = self.scanned + i;
                return Ok(Some(self.take(nl, true)));
            }
            self.scanned = self.end;
            if self.eof {
                if self.start == self.end {
                    return Ok(None);
                }
                let end = self.end;
                return Ok(Some(self.take(end, false)));
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
                match self.inner.read(&mut self.buf[self.end..]) {
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
        self.number += 1;
        let text = strip_bom(self.number, &self.buf[from..line_end]);
        Line { number: self.number, text, terminated }
    }
}

/// Files at least this large are read ahead on a second thread; below it,
/// starting a thread costs more than it saves.
pub(crate) const READ_AHEAD_MIN: u64 = 8 << 20;
/// Size of each read-ahead buffer (grown for a longer line).
const AHEAD_BUFFER: usize = 2 << 20;
/// Buffers in flight: one being filled while the other is parsed.
const AHEAD_BUFFERS: usize = 2;

/// A line with what `prepare` made of it (see [`Lines::open`]).
pub(crate) struct PreparedLine<'b, P> {
    pub line: Line<'b>,
    pub prepared: P,
}

/// The lines of a file, each with the result of a `prepare` step, run on this
/// thread for small files and on the read-ahead thread for large ones.
pub(crate) enum Lines<F, P> {
    Direct { reader: LineReader<File>, prepare: F },
    Ahead(ReadAhead<P>),
}

impl<F, P> Lines<F, P>
where
    F: FnMut(&[u8]) -> P + Clone + Send + 'static,
    P: Send + 'static,
{
    /// Open `path`; large files are read (and their lines prepared) ahead,
    /// unless no thread can be started.
    pub fn open(path: &Path, prepare: F) -> io::Result<Lines<F, P>> {
        let file = File::open(path)?;
        if file.metadata()?.len() >= READ_AHEAD_MIN {
            // Clones: the thread owns one of each, a failed start keeps the others.
            if let Some(ahead) = ReadAhead::start(file.try_clone()?, prepare.clone()) {
                return Ok(Lines::Ahead(ahead));
            }
        }
        Ok(Lines::Direct { reader: LineReader::new(file), prepare })
    }

    pub fn next_line(&mut self) -> io::Result<Option<PreparedLine<'_, P>>> {
        match self {
            Lines::Direct { reader, prepare } => Ok(reader.next_line()?.map(|line| {
                let prepared = prepare(line.text);
                PreparedLine { line, prepared }
            })),
            Lines::Ahead(r) => r.next_line(),
        }
    }
}

/// One line of a [`Filled`] buffer.
struct Split<P> {
    start: usize,
    end: usize,
    terminated: bool,
    prepared: Option<P>,
}

/// A buffer of whole lines from the read-ahead thread, already split and
/// prepared.
struct Filled<P> {
    buf: Vec<u8>,
    lines: Vec<Split<P>>,
    eof: bool,
}

/// Lines read and prepared ahead by a second thread, in two recycled
/// buffers. Dropping it stops the thread (its next send or receive fails)
/// and waits for it.
pub(crate) struct ReadAhead<P> {
    full: Option<Receiver<io::Result<Filled<P>>>>,
    free: Option<SyncSender<Vec<u8>>>,
    thread: Option<std::thread::JoinHandle<()>>,
    current: Option<Filled<P>>,
    next: usize,
    number: u64,
}

impl<P> Drop for ReadAhead<P> {
    fn drop(&mut self) {
        // Closing both channels first unblocks the thread wherever it waits.
        self.full = None;
        self.free = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl<P: Send + 'static> ReadAhead<P> {
    /// `None` when no thread can be started.
    fn start<F: FnMut(&[u8]) -> P + Send + 'static>(file: File, prepare: F) -> Option<ReadAhead<P>> {
        // A rendezvous: a filled buffer waits in the thread until it is taken.
        let (full_tx, full) = mpsc::sync_channel(0);
        let (free, free_rx) = mpsc::sync_channel(AHEAD_BUFFERS);
        let thread = std::thread::Builder::new()
            .name("session-read-ahead".into())
            .spawn(move || fill(file, prepare, &full_tx, &free_rx))
            .ok()?;
        Some(ReadAhead { full: Some(full), free: Some(free), thread: Some(thread), current: None, next: 0, number: 0 })
    }

    pub fn next_line(&mut self) -> io::Result<Option<PreparedLine<'_, P>>> {
        loop {
            if let Some(cur) = &self.current {
                if self.next < cur.lines.len() {
                    break;
                }
                if cur.eof {
                    return Ok(None);
                }
                if let (Some(done), Some(free)) = (self.current.take(), &self.free) {
                    // The thread may have stopped; the buffer is then simply dropped.
                    let _ = free.try_send(done.buf);
                }
            }
            let Some(full) = &self.full else {
                return Ok(None);
            };
            match full.recv() {
                Ok(Ok(filled)) => {
                    self.current = Some(filled);
                    self.next = 0;
                }
                Ok(Err(e)) => return Err(e),
                Err(_) => return Err(io::Error::other("the read-ahead thread stopped")),
            }
        }
        let Some(cur) = self.current.as_mut() else {
            return Ok(None);
        };
        let split = &mut cur.lines[self.next];
        self.next += 1;
        self.number += 1;
        let Some(prepared) = split.prepared.take() else {
            return Err(io::Error::other("a read-ahead line was taken twice"));
        };
        let line = Line { number: self.number, text: &cur.buf[split.start..split.end], terminated: split.terminated };
        Ok(Some(PreparedLine { line, prepared }))
    }
}

/// The read-ahead thread: fill buffers with whole lines, split and prepare
/// them, and hand them over; the unfinished last line of each buffer is
/// carried into the next.
fn fill<P, F: FnMut(&[u8]) -> P>(
    mut file: File,
    mut prepare: F,
    full: &SyncSender<io::Result<Filled<P>>>,
    free: &Receiver<Vec<u8>>,
) {
    let mut allocated = 1;
    let mut buf = vec![0u8; AHEAD_BUFFER];
    let mut len = 0;
    let mut number = 0u64;
    loop {
        // Fill the buffer, growing it while it holds no newline at all.
        let mut eof = false;
        let mut last_newline = None;
        while !eof {
            if len == buf.len() {
                last_newline = memchr::memrchr(b'\n', &buf[..len]);
                if last_newline.is_some() {
                    break;
                }
                buf.resize(buf.len() * 2, 0);
            }
            let end = buf.len().min(len + READ_CHUNK);
            match file.read(&mut buf[len..end]) {
                Ok(0) => eof = true,
                Ok(n) => len += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let _ = full.send(Err(e));
                    return;
                }
            }
        }
        let complete = if eof { len } else { last_newline.map_or(len, |i| i + 1) };
        let mut lines = Vec::new();
        let mut pos = 0;
        while pos < complete {
            let (end, terminated) = match memchr::memchr(b'\n', &buf[pos..complete]) {
                Some(i) => (pos + i, true),
                None => (complete, false),
            };
            number += 1;
            let text = strip_bom(number, &buf[pos..end]);
            let start = end - text.len();
            lines.push(Split { start, end, terminated, prepared: Some(prepare(text)) });
            pos = if terminated { end + 1 } else { end };
        }
        let mut next = if eof {
            Vec::new()
        } else if let Ok(b) = free.try_recv() {
            shrunk(b)
        } else if allocated < AHEAD_BUFFERS {
            allocated += 1;
            vec![0u8; AHEAD_BUFFER]
        } else {
            match free.recv() {
                Ok(b) => shrunk(b),
                Err(_) => return,
            }
        };
        let carried = len - complete;
        if !eof {
            if next.len() < carried + READ_CHUNK {
                next.resize(carried + READ_CHUNK, 0);
            }
            next[..carried].copy_from_slice(&buf[complete..len]);
        }
        if full.send(Ok(Filled { buf, lines, eof })).is_err() || eof {
            return;
        }
        buf = next;
        len = carried;
    }
}

/// A recycled buffer, back to its usual size if a long line had grown it, so
/// that one huge line does not keep two huge buffers alive.
fn shrunk(mut buf: Vec<u8>) -> Vec<u8> {
    if buf.len() > AHEAD_BUFFER {
        buf.truncate(AHEAD_BUFFER);
        buf.shrink_to_fit();
    }
    buf
}

/// JavaScript's `trim()` drops a leading BOM, so pi reads such files.
fn strip_bom(number: u64, text: &[u8]) -> &[u8] {
    if number == 1 {
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

    /// Every line of `data` read through a file with read-ahead.
    fn ahead_lines(data: &[u8]) -> Vec<(Vec<u8>, bool)> {
        let mut file = tempfile::tempfile().unwrap();
        std::io::Write::write_all(&mut file, data).unwrap();
        std::io::Seek::rewind(&mut file).unwrap();
        // The prepared value is the line's length, to check it travels with its line.
        let mut r = ReadAhead::start(file, |text: &[u8]| text.len()).unwrap();
        let mut out = Vec::new();
        while let Some(p) = r.next_line().unwrap() {
            assert_eq!(p.prepared, p.line.text.len());
            out.push((p.line.text.to_vec(), p.line.terminated));
        }
        out
    }

    #[test]
    fn read_ahead_gives_the_same_lines() {
        // Lines shorter and longer than a buffer, at every kind of boundary.
        let mut data = b"\xEF\xBB\xBFheader\n\n".to_vec();
        for len in [1, AHEAD_BUFFER - 9, AHEAD_BUFFER, AHEAD_BUFFER * 2 + 3, 17, READ_CHUNK + 1, 0, 5] {
            data.extend(std::iter::repeat_n(b'a' + (len % 26) as u8, len));
            data.push(b'\n');
        }
        data.extend_from_slice(b"last-unterminated");
        assert_eq!(ahead_lines(&data), lines(&data, usize::MAX));
        let terminated = &data[..data.len() - b"last-unterminated".len()];
        assert_eq!(ahead_lines(terminated), lines(terminated, usize::MAX));
        assert!(ahead_lines(b"").is_empty());
    }

    #[test]
    fn dropping_read_ahead_early_stops_its_thread() {
        let data = vec![b'x'; AHEAD_BUFFER * 5].into_iter().chain(*b"\n").cycle().take(AHEAD_BUFFER * 12);
        let data: Vec<u8> = data.collect();
        let mut file = tempfile::tempfile().unwrap();
        std::io::Write::write_all(&mut file, &data).unwrap();
        std::io::Seek::rewind(&mut file).unwrap();
        let mut r = ReadAhead::start(file, |_: &[u8]| ()).unwrap();
        assert!(r.next_line().unwrap().is_some());
        // Dropping joins the thread: this returns only if it stopped.
        drop(r);
    }
}
