//! Deterministic building blocks of the generated sessions: the PRNG, word
//! lists, pre-escaped tool-output lines and base64 pools, and pi's JSON
//! string escaping and ISO timestamps.

use std::fmt::Write as _;

/// splitmix64: tiny, fast and identical on every platform.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed ^ 0x9E37_79B9_7F4A_7C15)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// Uniform in `lo..hi`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi.saturating_sub(lo) as u64) as usize
    }

    /// True with probability `num/den`.
    pub fn chance(&mut self, num: u64, den: u64) -> bool {
        self.below(den) < num
    }

    pub fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len() as u64) as usize]
    }
}

pub const WORDS: &[&str] = &[
    "the",
    "a",
    "we",
    "should",
    "refactor",
    "billing",
    "pipeline",
    "token",
    "bucket",
    "limiter",
    "cache",
    "request",
    "handler",
    "because",
    "retry",
    "backoff",
    "parser",
    "session",
    "index",
    "stream",
    "buffer",
    "error",
    "path",
    "config",
    "test",
    "fails",
    "when",
    "the",
    "input",
    "is",
    "empty",
    "so",
    "let",
    "me",
    "check",
    "module",
    "and",
    "then",
    "update",
    "schema",
    "migration",
    "query",
    "latency",
    "budget",
    "p99",
    "worker",
    "queue",
    "lock",
    "deadlock",
    "timeout",
    "field",
    "struct",
    "trait",
    "async",
    "tokio",
    "runtime",
    "serde",
    "decode",
    "encode",
    "invoice",
    "customer",
    "webhook",
    "signature",
    "verify",
    "naïve",
    "résumé",
    "café",
    "→",
    "✓",
    "日本語",
    "—",
];

pub const PATHS: &[&str] = &[
    "src/billing/pipeline.rs",
    "src/billing/invoice.rs",
    "src/limiter.rs",
    "src/http/handler.rs",
    "src/db/migrations/0042_invoices.sql",
    "tests/pipeline_test.rs",
    "web/src/components/InvoiceTable.tsx",
    "docs/ARCHITECTURE.md",
    "Cargo.toml",
    "package.json",
];

pub const COMMANDS: &[&str] = &[
    "cargo test --workspace 2>&1 | tail -200",
    "cargo build --release",
    "rg -n \"fn retry\" src/",
    "npm run test -- --reporter=verbose",
    "git diff --stat HEAD~3",
    "ls -la src/billing",
    "docker compose logs api --tail=500",
    "psql -c \"EXPLAIN ANALYZE SELECT * FROM invoices WHERE customer_id = 42\"",
];

/// Pre-built text shared by all files: escaped tool-output lines and base64.
pub struct Pools {
    /// JSON-escaped lines (each ends with `\n` escaped), concatenated.
    tool_text: String,
    /// Byte offset of every line start in `tool_text`.
    line_starts: Vec<usize>,
    base64: String,
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const TOOL_POOL_BYTES: usize = 4 << 20;
const BASE64_POOL_BYTES: usize = 4 << 20;
pub const MAX_IMAGE_BYTES: usize = 3 << 20;
pub const MAX_TOOL_OUTPUT: usize = 400 << 10;

impl Pools {
    pub fn new() -> Self {
        let mut rng = Rng::new(0x5EED_0001);
        let mut tool_text = String::with_capacity(TOOL_POOL_BYTES + 1024);
        let mut line_starts = Vec::new();
        let mut raw = String::new();
        while tool_text.len() < TOOL_POOL_BYTES {
            line_starts.push(tool_text.len());
            raw.clear();
            tool_line(&mut rng, &mut raw);
            raw.push('\n');
            push_escaped(&mut tool_text, &raw);
        }
        let mut base64 = String::with_capacity(BASE64_POOL_BYTES);
        while base64.len() < BASE64_POOL_BYTES {
            let mut x = rng.next_u64();
            for _ in 0..10 {
                base64.push(B64[(x & 63) as usize] as char);
                x >>= 6;
            }
        }
        Pools {
            tool_text,
            line_starts,
            base64,
        }
    }

    /// About `len` bytes of escaped tool output, cut at line boundaries.
    pub fn tool_slice(&self, rng: &mut Rng, len: usize) -> &str {
        let len = len.min(MAX_TOOL_OUTPUT);
        let last_start = self.tool_text.len() - len - 1;
        let first = self.line_starts.partition_point(|&s| s < last_start);
        let start = self.line_starts[rng.below(first as u64) as usize];
        let end_idx = self.line_starts.partition_point(|&s| s < start + len);
        let end = self
            .line_starts
            .get(end_idx)
            .copied()
            .unwrap_or(self.tool_text.len());
        &self.tool_text[start..end]
    }

    /// `len` base64 characters (a multiple of 4).
    pub fn base64_slice(&self, rng: &mut Rng, len: usize) -> &str {
        let len = (len.min(MAX_IMAGE_BYTES) / 4) * 4;
        let start = rng.below((self.base64.len() - len) as u64 / 4) as usize * 4;
        &self.base64[start..start + len]
    }
}

fn tool_line(rng: &mut Rng, out: &mut String) {
    let n = rng.below(10_000);
    let w = *rng.pick(WORDS);
    let p = *rng.pick(PATHS);
    // write! to a String cannot fail.
    let _ = match rng.below(6) {
        0 => write!(out, "{}let {w}_{n} = self.{w}(&buf[..{}])?;", "    ".repeat(rng.range(0, 4)), n % 97),
        1 => write!(
            out,
            "2026-01-15T09:{:02}:{:02}.{:03}Z INFO api::{w}: request id={:08x} path=\"/api/v1/{w}\" status={} took={}ms",
            n % 60,
            (n / 60) % 60,
            n % 1000,
            rng.next_u64() as u32,
            [200, 200, 201, 404, 500][(n % 5) as usize],
            n % 900
        ),
        2 => write!(out, "{}K\t./{p}\t{w}", n % 900),
        3 => write!(out, "  \"{w}_{n}\": {{\"value\": {n}, \"note\": \"see C:\\\\build\\\\{w}\"}},"),
        4 => write!(out, "{p}:{}:    // TODO({w}): {w} — résumé ✓ {n}", n % 700),
        _ => write!(out, "test {w}::tests::{w}_{n} ... {}", if n % 17 == 0 { "FAILED" } else { "ok" }),
    };
}

/// Append `s` as the inside of a JSON string, escaped as `JSON.stringify` does.
pub fn push_escaped(out: &mut String, s: &str) {
    let mut start = 0;
    for (i, b) in s.bytes().enumerate() {
        let esc = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0x08 => "\\b",
            0x0c => "\\f",
            0..=0x1f => "",
            _ => continue,
        };
        out.push_str(&s[start..i]);
        if esc.is_empty() {
            let _ = write!(out, "\\u{:04x}", b);
        } else {
            out.push_str(esc);
        }
        start = i + 1;
    }
    out.push_str(&s[start..]);
}
