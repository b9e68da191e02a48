//! Reader benchmark: our session reader against pi 0.73.1 under node, on the
//! same deterministic session files (~10 MB, ~100 MB, ~1 GB).
//!
//! `cargo bench --bench reader [-- --sizes 10,100 --runs 3 --no-node ...]`
//!
//! Every measurement is a child process (this binary re-executed with
//! `--child-ours`, or `node bench/pi_reader.mjs`), so each peak RSS belongs to
//! one open + branch + build context + serialize. See bench/README.md.

#[path = "reader_support/generate.rs"]
mod generate;
#[path = "reader_support/measure.rs"]
mod measure;
#[path = "reader_support/pools.rs"]
mod pools;

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use clap::Parser;
use serde_json::{json, Value};

use generate::{GenStats, GEN_VERSION};
use measure::Sample;
use pools::Pools;

const MB: f64 = 1_000_000.0;
/// Targets from issue 16 (and issue 13 for the pathological files).
const SPEEDUP_TARGET: f64 = 10.0;
const MEMORY_RATIO_TARGET: f64 = 0.1;
const BIG_FILE_RSS_LIMIT_BYTES: u64 = 150_000_000;
const PATHOLOGICAL_RSS_LIMIT_BYTES: u64 = 200_000_000;

#[derive(Parser, Debug)]
#[command(about = "Session reader benchmark: ours vs pi 0.73.1 (node)")]
struct Args {
    /// Nominal file sizes in MB (10^6 bytes).
    #[arg(long, value_delimiter = ',', default_value = "10,100,1000")]
    sizes: Vec<u64>,
    /// Measurements (child processes) of our reader per file; the median time is reported.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Measurements of pi per file (a failed run is not repeated).
    #[arg(long, default_value_t = 3)]
    node_runs: usize,
    /// PRNG seed of the generated sessions.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Skip the pi/node baseline.
    #[arg(long)]
    no_node: bool,
    /// Node's --max-old-space-size for the baseline.
    #[arg(long, default_value_t = 8192)]
    node_heap_mb: u64,
    /// Kill a node run after this many seconds.
    #[arg(long, default_value_t = 600)]
    node_timeout_secs: u64,
    /// Where generated sessions are cached (default: <target>/bench-data).
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Results JSON (default: <target>/bench-results/reader.json).
    #[arg(long)]
    results: Option<PathBuf>,
    /// Regenerate the session files even if cached.
    #[arg(long)]
    regen: bool,
    /// Only generate the files.
    #[arg(long)]
    generate_only: bool,
    /// Also measure our reader on the pathological files of issue 13: one
    /// 200 MB tool-result line, and a session of 1M small entries.
    #[arg(long)]
    pathological: bool,
    /// Exit non-zero when a target is missed.
    #[arg(long)]
    strict: bool,
    /// Passed by `cargo bench`; without it (e.g. `cargo test --all-targets`) the bench does nothing.
    #[arg(long, hide = true)]
    bench: bool,
    #[arg(long, hide = true)]
    child_ours: Option<PathBuf>,
    #[arg(long, hide = true)]
    dump: Option<PathBuf>,
}

fn main() {
    let args = Args::parse();
    if let Some(file) = &args.child_ours {
        std::process::exit(measure::run_ours_child(file, args.dump.as_deref()));
    }
    if !args.bench {
        println!(
            "reader bench: not run outside `cargo bench --bench reader` (see bench/README.md)"
        );
        return;
    }
    match run(&args) {
        Ok(all_pass) => {
            if args.strict && !all_pass {
                std::process::exit(1);
            }
        }
        Err(e) => {
            eprintln!("reader bench: {e}");
            std::process::exit(2);
        }
    }
}

struct Paths {
    root: PathBuf,
    data: PathBuf,
    results: PathBuf,
}

fn paths(args: &Args) -> Paths {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let data = args
        .data_dir
        .clone()
        .unwrap_or_else(|| target.join("bench-data"));
    let results = args
        .results
        .clone()
        .unwrap_or_else(|| target.join("bench-results").join("reader.json"));
    Paths {
        root,
        data,
        results,
    }
}

/// The median (mean of the two middle values for an even count).
fn median(mut t: Vec<f64>) -> Option<f64> {
    t.sort_by(f64::total_cmp);
    let n = t.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(t[n / 2]),
        _ => Some((t[n / 2 - 1] + t[n / 2]) / 2.0),
    }
}

/// Result of one side (ours or pi) on one file.
#[derive(Default)]
struct Side {
    samples: Vec<Sample>,
    failure: Option<String>,
}

impl Side {
    fn ok(&self) -> Vec<&Sample> {
        self.samples.iter().filter(|s| s.ok).collect()
    }

    fn median_secs(&self) -> Option<f64> {
        median(self.ok().iter().map(|s| s.secs).collect())
    }

    fn median_cpu_secs(&self) -> Option<f64> {
        median(
            self.ok()
                .iter()
                .map(|s| s.cpu_secs)
                .filter(|&c| c > 0.0)
                .collect(),
        )
    }

    fn min_secs(&self) -> Option<f64> {
        self.ok().iter().map(|s| s.secs).min_by(f64::total_cmp)
    }

    /// The highest self-reported peak over the runs (conservative).
    fn peak_rss_bytes(&self) -> Option<u64> {
        self.ok().iter().map(|s| s.peak_rss_kb * 1024).max()
    }

    fn to_json(&self, bytes: u64) -> Value {
        json!({
            "samples": self.samples,
            "failure": self.failure,
            "medianSecs": self.median_secs(),
            "medianCpuSecs": self.median_cpu_secs(),
            "minSecs": self.min_secs(),
            "mbPerSec": self.median_secs().map(|s| bytes as f64 / MB / s),
            "peakRssBytes": self.peak_rss_bytes(),
        })
    }
}

struct SizeResult {
    nominal_mb: u64,
    file: PathBuf,
    bytes: u64,
    gen: GenStats,
    raw_read_secs: f64,
    load_avg: Option<String>,
    ours: Side,
    pi: Option<Side>,
    identical: Option<Result<(), String>>,
}

impl SizeResult {
    fn speedup(&self) -> Option<f64> {
        Some(self.pi.as_ref()?.median_secs()? / self.ours.median_secs()?)
    }

    /// Speedup by CPU time, less sensitive to other load on the machine.
    fn cpu_speedup(&self) -> Option<f64> {
        Some(self.pi.as_ref()?.median_cpu_secs()? / self.ours.median_cpu_secs()?)
    }

    fn memory_ratio(&self) -> Option<f64> {
        Some(self.ours.peak_rss_bytes()? as f64 / self.pi.as_ref()?.peak_rss_bytes()? as f64)
    }
}

fn run(args: &Args) -> Result<bool, String> {
    let p = paths(args);
    std::fs::create_dir_all(&p.data).map_err(|e| format!("{}: {e}", p.data.display()))?;
    let results_dir = p
        .results
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    std::fs::create_dir_all(&results_dir).map_err(|e| format!("{}: {e}", results_dir.display()))?;
    let node = if args.no_node {
        Err("skipped (--no-node)".to_string())
    } else {
        node_setup(&p.root)
    };
    if let Err(why) = &node {
        println!("pi baseline: {why}");
    }
    let exe = std::env::current_exe().map_err(|e| format!("current exe: {e}"))?;
    let pools = Pools::new();
    let mut results = Vec::new();
    for &mb in &args.sizes {
        let (file, gen) = ensure_file(&p.data, mb, args.seed, args.regen, &pools)?;
        if args.generate_only {
            continue;
        }
        let bytes = gen.bytes;
        let raw_read_secs = warm_cache(&file).map_err(|e| format!("{}: {e}", file.display()))?;
        let load_avg = load_avg();
        println!(
            "[{mb} MB] load average before measuring: {}",
            load_avg.as_deref().unwrap_or("?")
        );
        println!("[{mb} MB] measuring our reader ({} runs)...", args.runs);
        let ours_dump = results_dir.join(format!("ours-{mb}mb.txt"));
        let mut ours = Side::default();
        for i in 0..args.runs.max(1) {
            let mut cmd = Command::new(&exe);
            cmd.arg("--child-ours").arg(&file);
            if i == 0 {
                cmd.arg("--dump").arg(&ours_dump);
            }
            let s = measure::run_child(cmd, Duration::from_secs(1800));
            report_sample("ours", &s);
            let failed = !s.ok;
            if failed {
                ours.failure = s.error.clone();
            }
            ours.samples.push(s);
            if failed {
                break;
            }
        }
        let mut pi = None;
        let mut identical = None;
        if let Ok(node_bin) = &node {
            println!(
                "[{mb} MB] measuring pi 0.73.1 under node ({} runs)...",
                args.node_runs
            );
            let pi_dump = results_dir.join(format!("pi-{mb}mb.txt"));
            let _ = std::fs::remove_file(&pi_dump);
            let mut side = Side::default();
            for i in 0..args.node_runs.max(1) {
                let mut cmd = Command::new(node_bin);
                cmd.arg(format!("--max-old-space-size={}", args.node_heap_mb))
                    .arg(p.root.join("bench").join("pi_reader.mjs"))
                    .arg(&file);
                if i == 0 {
                    cmd.arg("--dump").arg(&pi_dump);
                }
                let s = measure::run_child(cmd, Duration::from_secs(args.node_timeout_secs));
                report_sample("pi  ", &s);
                let failed = !s.ok;
                if failed {
                    side.failure = s.error.clone();
                }
                side.samples.push(s);
                if failed {
                    break;
                }
            }
            if side.failure.is_none() && ours.failure.is_none() {
                identical = Some(compare_files(&ours_dump, &pi_dump));
            }
            pi = Some(side);
        }
        results.push(SizeResult {
            nominal_mb: mb,
            file,
            bytes,
            gen,
            raw_read_secs,
            load_avg,
            ours,
            pi,
            identical,
        });
    }
    if args.generate_only {
        return Ok(true);
    }
    print_table(&results);
    let mut targets = check_targets(&results);
    if args.pathological {
        targets.extend(pathological(&exe, &p.data)?);
    }
    let all_pass = targets.iter().all(|t| t["pass"] != json!(false));
    write_results(&p.results, args, &node, &results, &targets)?;
    println!("results: {}", p.results.display());
    Ok(all_pass)
}

/// The 1/5/15-minute load averages: the bench shares the machine, and wall
/// times mean little without them.
fn load_avg() -> Option<String> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    Some(
        text.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" "),
    )
}

fn report_sample(who: &str, s: &Sample) {
    if s.ok {
        println!(
            "  {who}: {:.3} s (open {:.3} s, cpu {:.3} s), peak RSS {:.1} MB (baseline {:.1} MB), {} messages, {} bytes serialized",
            s.secs,
            s.open_secs,
            s.cpu_secs,
            s.peak_rss_kb as f64 * 1024.0 / MB,
            s.baseline_rss_kb as f64 * 1024.0 / MB,
            s.messages,
            s.serialized_bytes
        );
    } else {
        println!(
            "  {who}: failed: {} (peak RSS seen {:.1} MB, after {:.1} s)",
            s.error.as_deref().unwrap_or("unknown"),
            s.polled_peak_rss_kb.max(s.peak_rss_kb) as f64 * 1024.0 / MB,
            s.wall_secs
        );
    }
}

/// Node and the pinned pi, installing pi with `npm ci` if missing.
fn node_setup(root: &Path) -> Result<PathBuf, String> {
    let node = PathBuf::from("node");
    let version = Command::new(&node)
        .arg("--version")
        .output()
        .map_err(|e| format!("node not found: {e}"))?;
    println!("node {}", String::from_utf8_lossy(&version.stdout).trim());
    let pi_ref = root.join("tools").join("pi-ref");
    let pkg = pi_ref.join("node_modules/@mariozechner/pi-coding-agent/package.json");
    if !pkg.exists() {
        println!("installing pinned pi: npm ci --prefix {}", pi_ref.display());
        let status = Command::new("npm")
            .arg("ci")
            .arg("--prefix")
            .arg(&pi_ref)
            .status()
            .map_err(|e| format!("npm not found: {e}"))?;
        if !status.success() || !pkg.exists() {
            return Err(format!("`npm ci --prefix {}` failed", pi_ref.display()));
        }
    }
    let text = std::fs::read_to_string(&pkg).map_err(|e| format!("{}: {e}", pkg.display()))?;
    let v: Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", pkg.display()))?;
    println!("pi {}", v["version"].as_str().unwrap_or("?"));
    Ok(node)
}

/// The cached file for `mb`, generated if missing or stale.
fn ensure_file(
    dir: &Path,
    mb: u64,
    seed: u64,
    regen: bool,
    pools: &Pools,
) -> Result<(PathBuf, GenStats), String> {
    let name = format!("session-{mb}mb-seed{seed}-g{GEN_VERSION}");
    let file = dir.join(format!("{name}.jsonl"));
    let meta = dir.join(format!("{name}.stats.json"));
    if !regen {
        let cached = std::fs::read_to_string(&meta)
            .ok()
            .and_then(|t| serde_json::from_str::<GenStats>(&t).ok());
        if let (Some(stats), Ok(m)) = (cached, std::fs::metadata(&file)) {
            if m.len() == stats.bytes {
                println!(
                    "[{mb} MB] cached: {} ({} bytes)",
                    file.display(),
                    stats.bytes
                );
                return Ok((file, stats));
            }
        }
    }
    let target = mb * 1_000_000;
    check_disk(dir, target)?;
    let _ = std::fs::remove_file(&meta);
    let tmp = dir.join(format!("{name}.jsonl.tmp"));
    let t0 = Instant::now();
    let stats = generate::generate(&tmp, target, seed, pools)
        .map_err(|e| format!("{}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, &file).map_err(|e| format!("{}: {e}", file.display()))?;
    let secs = t0.elapsed().as_secs_f64();
    let text = serde_json::to_string_pretty(&stats).map_err(|e| e.to_string())?;
    std::fs::write(&meta, text).map_err(|e| format!("{}: {e}", meta.display()))?;
    println!(
        "[{mb} MB] generated {} ({} bytes, {} lines, images {:.0}%, tool output {:.0}%) in {secs:.1} s",
        file.display(),
        stats.bytes,
        stats.lines,
        100.0 * stats.image_bytes as f64 / stats.bytes as f64,
        100.0 * stats.tool_output_bytes as f64 / stats.bytes as f64,
    );
    Ok((file, stats))
}

/// Refuse to fill the disk: keep the file plus 2 GB free.
fn check_disk(dir: &Path, need: u64) -> Result<(), String> {
    let out = match Command::new("df").arg("-Pk").arg(dir).output() {
        Ok(o) => o,
        Err(_) => return Ok(()), // no df: nothing to check with
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let avail_kb = text
        .lines()
        .nth(1)
        .and_then(|l| l.split_whitespace().nth(3))
        .and_then(|v| v.parse::<u64>().ok());
    match avail_kb {
        Some(kb) if kb * 1024 < need + 2_000_000_000 => Err(format!(
            "not enough disk space in {}: {:.1} GB free, need {:.1} GB + 2 GB margin",
            dir.display(),
            kb as f64 * 1024.0 / 1e9,
            need as f64 / 1e9
        )),
        _ => Ok(()),
    }
}

/// Read the whole file once so both readers start from a warm page cache;
/// returns the time of that plain read (a floor for any reader).
fn warm_cache(file: &Path) -> std::io::Result<f64> {
    let mut best = f64::MAX;
    let mut buf = vec![0u8; 8 << 20];
    for _ in 0..2 {
        let t0 = Instant::now();
        let mut f = File::open(file)?;
        while f.read(&mut buf)? > 0 {}
        best = best.min(t0.elapsed().as_secs_f64());
    }
    Ok(best)
}

/// Byte-compare the two serialized outputs.
fn compare_files(a: &Path, b: &Path) -> Result<(), String> {
    let x = std::fs::read(a).map_err(|e| format!("{}: {e}", a.display()))?;
    let y = std::fs::read(b).map_err(|e| format!("{}: {e}", b.display()))?;
    match x.iter().zip(&y).position(|(p, q)| p != q) {
        Some(i) => Err(format!(
            "differ at byte {i} (ours {} bytes, pi {} bytes)",
            x.len(),
            y.len()
        )),
        None if x.len() != y.len() => Err(format!(
            "lengths differ (ours {} bytes, pi {} bytes)",
            x.len(),
            y.len()
        )),
        None => Ok(()),
    }
}

fn fmt_opt(v: Option<f64>, prec: usize) -> String {
    v.map(|x| format!("{x:.prec$}"))
        .unwrap_or_else(|| "-".to_string())
}

fn print_table(results: &[SizeResult]) {
    println!();
    println!(
        "{:>7} {:>9} | {:>10} {:>10} | {:>10} {:>10} | {:>8} {:>8} {:>9} | {:>9} | output",
        "file",
        "MB",
        "ours MB/s",
        "ours RSS",
        "pi MB/s",
        "pi RSS",
        "speedup",
        "cpu x",
        "mem ratio",
        "read MB/s"
    );
    println!("{}", "-".repeat(128));
    for r in results {
        let mbs = |s: &Side| s.median_secs().map(|t| r.bytes as f64 / MB / t);
        let rss = |s: &Side| s.peak_rss_bytes().map(|b| b as f64 / MB);
        let (pi_speed, pi_rss) = match &r.pi {
            None => ("skipped".to_string(), "-".to_string()),
            Some(pi) if pi.failure.is_some() => ("failed".to_string(), "-".to_string()),
            Some(pi) => (fmt_opt(mbs(pi), 1), format!("{} MB", fmt_opt(rss(pi), 1))),
        };
        let output = match &r.identical {
            Some(Ok(())) => "identical to pi".to_string(),
            Some(Err(e)) => format!("DIFFERENT: {e}"),
            None => "-".to_string(),
        };
        let ours_speed = if r.ours.failure.is_some() {
            "failed".to_string()
        } else {
            fmt_opt(mbs(&r.ours), 1)
        };
        println!(
            "{:>4} MB {:>9.1} | {:>10} {:>7} MB | {:>10} {:>10} | {:>7}x {:>7}x {:>9} | {:>9.0} | {output}",
            r.nominal_mb,
            r.bytes as f64 / MB,
            ours_speed,
            fmt_opt(rss(&r.ours), 1),
            pi_speed,
            pi_rss,
            fmt_opt(r.speedup(), 1),
            fmt_opt(r.cpu_speedup(), 1),
            fmt_opt(r.memory_ratio(), 3),
            r.bytes as f64 / MB / r.raw_read_secs,
        );
    }
    for r in results {
        for (who, side) in [("ours", Some(&r.ours)), ("pi", r.pi.as_ref())] {
            if let Some(f) = side.and_then(|s| s.failure.as_ref()) {
                println!("{} MB, {who}: failed: {f}", r.nominal_mb);
            }
        }
    }
    println!("(MB = 10^6 bytes; RSS = peak resident set of the measuring process; speedup = pi wall time / our wall");
    println!(" time, medians; cpu x = the same ratio by CPU time; read MB/s = plain read of the cached file)");
}

fn check_targets(results: &[SizeResult]) -> Vec<Value> {
    let mut targets = Vec::new();
    let mut push =
        |name: String, value: Option<f64>, limit: f64, pass: Option<bool>, note: &str| {
            let verdict = match pass {
                Some(true) => "PASS",
                Some(false) => "FAIL",
                None => "n/a",
            };
            println!(
                "target {name}: {} (limit {limit}) {verdict} {note}",
                fmt_opt(value, 3)
            );
            targets.push(
                json!({ "name": name, "value": value, "limit": limit, "pass": pass, "note": note }),
            );
        };
    println!();
    match results.iter().find(|r| r.nominal_mb == 100) {
        Some(r) => {
            let note = if r.pi.is_none() {
                "(pi not measured)"
            } else {
                ""
            };
            let s = r.speedup();
            let cpu_note = format!("(by CPU time: {}x) {note}", fmt_opt(r.cpu_speedup(), 1));
            push(
                "100 MB speedup vs pi >= 10x".into(),
                s,
                SPEEDUP_TARGET,
                s.map(|v| v >= SPEEDUP_TARGET),
                &cpu_note,
            );
            let m = r.memory_ratio();
            push(
                "100 MB peak RSS ratio vs pi <= 0.1".into(),
                m,
                MEMORY_RATIO_TARGET,
                m.map(|v| v <= MEMORY_RATIO_TARGET),
                note,
            );
        }
        None => println!("target 100 MB: n/a (size not run)"),
    }
    match results.iter().find(|r| r.nominal_mb == 1000) {
        Some(r) => {
            let rss = r.ours.peak_rss_bytes();
            let limit = BIG_FILE_RSS_LIMIT_BYTES as f64 / MB;
            push(
                "1 GB our peak RSS < 150 MB".into(),
                rss.map(|b| b as f64 / MB),
                limit,
                rss.map(|b| b < BIG_FILE_RSS_LIMIT_BYTES),
                "(MB)",
            );
        }
        None => println!("target 1 GB: n/a (size not run)"),
    }
    targets
}

fn write_results(
    path: &Path,
    args: &Args,
    node: &Result<PathBuf, String>,
    results: &[SizeResult],
    targets: &[Value],
) -> Result<(), String> {
    let cpu = std::fs::read_to_string("/proc/cpuinfo").ok().and_then(|t| {
        t.lines()
            .find(|l| l.starts_with("model name"))
            .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
    });
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(0);
    let sizes: Vec<Value> = results
        .iter()
        .map(|r| {
            json!({
                "nominalMb": r.nominal_mb,
                "file": r.file,
                "bytes": r.bytes,
                "generated": r.gen,
                "rawReadMbPerSec": r.bytes as f64 / MB / r.raw_read_secs,
                "ours": r.ours.to_json(r.bytes),
                "pi": r.pi.as_ref().map(|s| s.to_json(r.bytes)),
                "loadAvgBefore": r.load_avg,
                "speedup": r.speedup(),
                "cpuSpeedup": r.cpu_speedup(),
                "memoryRatio": r.memory_ratio(),
                "outputIdentical": r.identical.as_ref().map(|x| x.is_ok()),
                "outputDifference": r.identical.as_ref().and_then(|x| x.clone().err()),
            })
        })
        .collect();
    let doc = json!({
        "bench": "reader",
        "unixTime": std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0),
        "machine": { "cpu": cpu, "cores": cores },
        "seed": args.seed,
        "genVersion": GEN_VERSION,
        "runs": args.runs,
        "nodeRuns": args.node_runs,
        "nodeHeapMb": args.node_heap_mb,
        "nodeTimeoutSecs": args.node_timeout_secs,
        "piBaseline": match node { Ok(_) => Value::Null, Err(e) => json!(e) },
        "units": { "mb": "10^6 bytes", "rss": "bytes (peak resident set, VmHWM / maxRSS)" },
        "sizes": sizes,
        "targets": targets,
    });
    let text = serde_json::to_string_pretty(&doc).map_err(|e| e.to_string())?;
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, text).map_err(|e| format!("{}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| format!("{}: {e}", path.display()))
}

/// The pathological files of issue 13, written once into `dir`: peak memory
/// must be bounded by what the reader keeps, not by the line or entry count.
fn pathological(exe: &Path, dir: &Path) -> Result<Vec<Value>, String> {
    use std::io::Write;
    const HEAD: &str = r#"{"type":"session","version":3,"id":"patho","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}"#;
    let message = |id: &str, parent: &str, role: &str, content: &str| {
        format!(
            r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"2026-01-01T00:00:00.000Z","message":{{"role":"{role}","content":{content},"toolCallId":"c","toolName":"bash","timestamp":1}}}}"#
        )
    };
    let write = |name: &str,
                 body: &dyn Fn(&mut dyn Write) -> std::io::Result<()>|
     -> Result<PathBuf, String> {
        let file = dir.join(name);
        if !file.exists() {
            let tmp = file.with_extension("tmp");
            let mut out = std::io::BufWriter::new(File::create(&tmp).map_err(|e| e.to_string())?);
            writeln!(out, "{HEAD}")
                .and_then(|()| body(&mut out))
                .and_then(|()| out.flush())
                .map_err(|e| e.to_string())?;
            std::fs::rename(&tmp, &file).map_err(|e| e.to_string())?;
        }
        Ok(file)
    };
    let long_line = write("pathological-200mb-line-v2.jsonl", &|out| {
        writeln!(
            out,
            "{}",
            message("u", "null", "user", r#""show me the log""#)
        )?;
        let text = "line of output \\u00e9\\n".repeat(200_000_000 / 23 + 1);
        writeln!(
            out,
            "{}",
            message(
                "t",
                r#""u""#,
                "toolResult",
                &format!(r#"[{{"type":"text","text":"{text}"}}]"#)
            )
        )
    })?;
    let many = write("pathological-1m-entries.jsonl", &|out| {
        let mut parent = "null".to_string();
        for i in 0..1_000_000 {
            let (role, text) = if i % 2 == 0 {
                ("user", "a short question")
            } else {
                ("assistant", "an answer")
            };
            let content = format!(r#"[{{"type":"text","text":"{text} {i}"}}]"#);
            writeln!(
                out,
                "{}",
                message(&format!("e{i:07}"), &parent, role, &content)
            )?;
            parent = format!(r#""e{i:07}""#);
        }
        Ok(())
    })?;
    let mut targets = Vec::new();
    for (name, file) in [
        ("200 MB tool-result line", long_line),
        ("1M-entry session", many),
    ] {
        let mut cmd = Command::new(exe);
        cmd.arg("--child-ours").arg(&file);
        let s = measure::run_child(cmd, Duration::from_secs(1800));
        report_sample(name, &s);
        let rss = s.ok.then_some(s.peak_rss_kb * 1024);
        let pass = rss.map(|b| b <= PATHOLOGICAL_RSS_LIMIT_BYTES);
        let verdict = match pass {
            Some(true) => "PASS",
            Some(false) => "FAIL",
            None => "n/a",
        };
        let mb = rss.map(|b| b as f64 / MB);
        println!(
            "target {name} our peak RSS <= 200 MB: {} {verdict} ({:.2} s)",
            fmt_opt(mb, 1),
            s.secs
        );
        targets.push(json!({ "name": format!("{name} our peak RSS <= 200 MB"), "value": mb, "limit": 200.0, "pass": pass, "secs": s.secs }));
    }
    Ok(targets)
}
