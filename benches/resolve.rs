//! Resolution bench: 10,000 sessions and meta files in a temp agent dir.
//!
//! Measures the first resolution with no index yet (id, exact name), the
//! full index build, the first (cold) resolution of a fresh catalog with the
//! index on disk, warm resolution
//! p50/p99 per reference kind (id, id prefix, name, slug, fuzzy) over distinct
//! references, and completion latency per keystroke, next to the targets
//! (warm p99 ≤ 5 ms, cold ≤ 300 ms). Run: `cargo bench --bench resolve`.
//! `RESOLVE_BENCH_SESSIONS` changes the session count. The machine's own
//! noise is measured right after the warm lookups: a fixed computation,
//! timed the same way.

use std::path::Path;
use std::time::{Duration, Instant};

use session_index::resolve::{slug, Catalog};

#[path = "../tests/support/rng.rs"]
mod rng;
#[path = "support/words.rs"]
mod words;

use rng::Rng;
use words::TOPICS;

struct Generated {
    id: String,
    name: String,
    cwd: String,
}

fn uuid(rng: &mut Rng) -> String {
    let a = rng.next();
    let b = rng.next();
    format!(
        "{:08x}-{:04x}-7{:03x}-8{:03x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0xfff,
        b >> 52,
        b & 0xffff_ffff_ffff
    )
}

fn generate(agent: &Path, n: usize) -> Vec<Generated> {
    let sessions = agent.join("sessions");
    let meta_dir = agent.join("sessions-meta");
    std::fs::create_dir_all(&meta_dir).expect("mkdir");
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let id = uuid(&mut rng);
        let project = i % 40;
        let cwd = format!("/home/dev/project-{project:02}");
        let dir = sessions.join(format!("--home-dev-project-{project:02}--"));
        if i < 40 {
            std::fs::create_dir_all(&dir).expect("mkdir");
        }
        let words: Vec<&str> = (0..3).map(|_| rng.pick(TOPICS)).collect();
        let name = format!("{} {} {} {i}", capitalize(words[0]), words[1], words[2]);
        let first = format!(
            "Please help with the {} {} in {}; it fails on {}",
            words[1],
            words[2],
            words[0],
            rng.pick(TOPICS)
        );
        let mut text = format!(
            "{{\"type\":\"session\",\"version\":3,\"id\":\"{id}\",\"timestamp\":\"2026-02-20T12:00:00.000Z\",\"cwd\":\"{cwd}\"}}\n"
        );
        let mut parent = "null".to_string();
        for turn in 0..4 {
            let user = if turn == 0 {
                first.clone()
            } else {
                format!("Next step {turn} for {}", words[2])
            };
            let e = format!("u{turn}{i:06}");
            text.push_str(&format!("{{\"type\":\"message\",\"id\":\"{e}\",\"parentId\":{parent},\"timestamp\":\"2026-02-20T12:00:01.000Z\",\"message\":{{\"role\":\"user\",\"content\":[{{\"type\":\"text\",\"text\":\"{user}\"}}],\"timestamp\":1771588800000}}}}\n"));
            let a = format!("a{turn}{i:06}");
            text.push_str(&format!("{{\"type\":\"message\",\"id\":\"{a}\",\"parentId\":\"{e}\",\"timestamp\":\"2026-02-20T12:00:02.000Z\",\"message\":{{\"role\":\"assistant\",\"content\":[{{\"type\":\"text\",\"text\":\"I changed src/{}.rs and ran the tests; {} now passes. {}\"}},{{\"type\":\"toolCall\",\"id\":\"c{turn}\",\"name\":\"read\",\"arguments\":{{\"path\":\"src/{}.rs\"}}}}],\"provider\":\"mock\",\"model\":\"m\",\"stopReason\":\"stop\",\"timestamp\":1771588800500}}}}\n", words[0], words[1], "lorem ipsum dolor sit amet ".repeat(8), words[2]));
            parent = format!("\"{a}\"");
        }
        text.push_str(&format!("{{\"type\":\"session_info\",\"id\":\"n{i:06}\",\"parentId\":{parent},\"timestamp\":\"2026-02-20T12:00:03.000Z\",\"name\":\"{name}\"}}\n"));
        let path = dir.join(format!("2026-02-20T12-00-00-000Z_{id}.jsonl"));
        std::fs::write(&path, text).expect("write session");
        let meta = serde_json::json!({
            "schemaVersion": 1, "sessionId": id, "sessionFile": path, "name": name,
            "description": format!("Work on the {} {} of {}", words[1], words[2], words[0]),
            "summary": format!("{} ", first).repeat(6), "tags": [words[0], words[1]], "cwd": cwd,
            "createdAt": "2026-02-20T12:00:00.000Z", "updatedAt": "2026-02-20T13:00:00.000Z", "model": "local/extractive"
        });
        std::fs::write(meta_dir.join(format!("{id}.meta.json")), meta.to_string())
            .expect("write meta");
        out.push(Generated { id, name, cwd });
    }
    out
}

/// A fixed amount of arithmetic (no memory traffic, no system calls).
fn fixed_work(rounds: u64) -> u64 {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for i in 0..rounds {
        x = std::hint::black_box(x.rotate_left(5) ^ i).wrapping_mul(0x2545_f491_4f6c_dd1d);
    }
    x
}

/// Rounds of [`fixed_work`] taking about `target` (the fastest of a few tries).
fn calibrate(target: Duration) -> u64 {
    let probe = 100_000;
    let fastest = (0..20)
        .map(|_| {
            let t = Instant::now();
            std::hint::black_box(fixed_work(probe));
            t.elapsed()
        })
        .min()
        .unwrap_or(Duration::from_micros(100));
    (probe as f64 * target.as_secs_f64() / fastest.as_secs_f64().max(1e-9)) as u64
}

/// Builds a reference of one kind for a session.
type MakeRef = fn(&Generated, &mut Rng) -> String;

fn capitalize(w: &str) -> String {
    let mut c = w.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

fn pct(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// This thread's CPU time (user + system): what a lookup costs without the
/// time it waited for a CPU on a loaded machine.
fn thread_cpu() -> Duration {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn main() {
    let n: usize = std::env::var("RESOLVE_BENCH_SESSIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let tmp = tempfile::tempdir().expect("tempdir");
    let agent = tmp.path().join("agent");
    let t = Instant::now();
    let sessions = generate(&agent, n);
    println!(
        "generated {n} sessions + {n} meta files in {:.0} ms",
        ms(t.elapsed())
    );
    let (sdir, mdir) = (agent.join("sessions"), agent.join("sessions-meta"));
    // First-ever: a fresh catalog and no index yet. By id the catalog answers
    // from directory listings and one file; by exact name from the listings
    // and the meta files. Files are in the OS page cache, as right after pi
    // wrote them. The index each lookup starts is removed after it.
    let index_dir = agent.join("sessions-index");
    let (mut first_id, mut first_name) = (Vec::new(), Vec::new());
    for run in 0..3 {
        let target = &sessions[(run * 997) % n];
        for (times, r) in [(&mut first_id, &target.id), (&mut first_name, &target.name)] {
            let _ = std::fs::remove_dir_all(&index_dir);
            let c = Catalog::new();
            let t = Instant::now();
            let got = c
                .resolve(&sdir, &mdir, &target.cwd, r)
                .expect("first-ever resolve");
            times.push(t.elapsed());
            assert_eq!(got.entry.id, target.id);
        }
    }
    let _ = std::fs::remove_dir_all(&index_dir);
    first_id.sort();
    first_name.sort();

    // The floor for a full build on this machine: open and read every file, no parsing.
    let t = Instant::now();
    let mut bytes = 0usize;
    for dir in [&sdir, &mdir] {
        let mut stack = vec![dir.clone()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).expect("read_dir").flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                } else {
                    bytes += std::fs::read(&p).map(|b| b.len()).unwrap_or(0);
                }
            }
        }
    }
    let raw_read = t.elapsed();

    // Build the index (what the session_start refresh does), timed.
    let t = Instant::now();
    Catalog::new().refresh_task(&sdir, &mdir)();
    let full_build = t.elapsed();

    // Cold: a fresh catalog (as in a fresh process) with the index on disk.
    let mut cold_id = Vec::new();
    let mut cold_name = Vec::new();
    let mut cold_fuzzy = Vec::new();
    let mut cold_id_cpu = Vec::new();
    let mut cold_name_cpu = Vec::new();
    for run in 0..5 {
        let target = &sessions[(run * 997) % n];
        let c = Catalog::new();
        let (t, cpu) = (Instant::now(), thread_cpu());
        let got = c
            .resolve(&sdir, &mdir, &target.cwd, &target.id)
            .expect("cold resolve by id");
        cold_id.push(t.elapsed());
        cold_id_cpu.push(thread_cpu().saturating_sub(cpu));
        assert_eq!(got.entry.id, target.id);
        let c = Catalog::new();
        let (t, cpu) = (Instant::now(), thread_cpu());
        let got = c
            .resolve(&sdir, &mdir, &target.cwd, &target.name)
            .expect("cold resolve by name");
        cold_name.push(t.elapsed());
        cold_name_cpu.push(thread_cpu().saturating_sub(cpu));
        assert_eq!(got.entry.id, target.id);
        let c = Catalog::new();
        let words: Vec<&str> = target.name.split_whitespace().take(3).collect();
        let t = Instant::now();
        let _ = c.resolve(&sdir, &mdir, &target.cwd, &words.join(" "));
        cold_fuzzy.push(t.elapsed());
    }
    cold_fuzzy.sort();
    cold_id.sort();
    cold_name.sort();
    cold_id_cpu.sort();
    cold_name_cpu.sort();
    println!(
        "  COLD-CPU thread CPU p50 of 5: by id {:.1} ms, by name {:.1} ms",
        cold_id_cpu[2].as_secs_f64() * 1e3,
        cold_name_cpu[2].as_secs_f64() * 1e3
    );

    let catalog = Catalog::new();
    catalog
        .resolve(&sdir, &mdir, &sessions[0].cwd, &sessions[0].name)
        .expect("warm-up");
    let mut rng = Rng(42);
    let kinds: [(&str, MakeRef); 5] = [
        ("id", |s, _| s.id.clone()),
        ("prefix", |s, _| s.id[..8].to_string()),
        ("name", |s, _| s.name.clone()),
        ("slug", |s, _| slug(&s.name)),
        ("fuzzy", |s, _| {
            // Drop a letter from each word and the trailing number: no exact key matches.
            let words: Vec<String> = s
                .name
                .split_whitespace()
                .take(3)
                .map(|w| {
                    w.chars()
                        .enumerate()
                        .filter(|(i, _)| *i != 1)
                        .map(|(_, c)| c)
                        .collect()
                })
                .collect();
            words.join(" ")
        }),
    ];
    let per_kind = 2000;
    let mut all = Vec::new();
    let mut all_cpu = Vec::new();
    let mut hit_times = Vec::new();
    println!("\nwarm resolution ({per_kind} distinct references per kind):");
    for (kind, make) in kinds {
        let mut times = Vec::with_capacity(per_kind);
        let mut err_times = Vec::new();
        let (mut ok, mut err) = (0, 0);
        for _ in 0..per_kind {
            let s = &sessions[(rng.next() % n as u64) as usize];
            let r = make(s, &mut rng);
            let (t, cpu) = (Instant::now(), thread_cpu());
            let res = catalog.resolve(&sdir, &mdir, &s.cwd, &r);
            times.push(t.elapsed());
            all_cpu.push(thread_cpu().saturating_sub(cpu));
            match res {
                Ok(e) if kind == "fuzzy" || e.entry.id == s.id => {
                    ok += 1;
                    hit_times.push(*times.last().unwrap_or(&Duration::ZERO));
                }
                Ok(_) | Err(_) => {
                    err += 1;
                    err_times.push(*times.last().unwrap_or(&Duration::ZERO));
                }
            }
        }
        times.sort();
        err_times.sort();
        println!(
            "  {kind:<7} p50 {:>7.3} ms  p99 {:>7.3} ms  max {:>7.3} ms  (resolved {ok}, other {err})",
            ms(pct(&times, 0.5)),
            ms(pct(&times, 0.99)),
            ms(*times.last().unwrap_or(&Duration::ZERO))
        );
        if !err_times.is_empty() {
            println!(
                "          the {} not resolved to the session (ambiguous, not found, another): p50 {:>7.3} ms  max {:>7.3} ms",
                err_times.len(),
                ms(pct(&err_times, 0.5)),
                ms(*err_times.last().unwrap_or(&Duration::ZERO))
            );
        }
        all.extend(times);
    }
    all.sort();
    all_cpu.sort();
    let warm_p99 = pct(&all, 0.99);
    // The machine's own noise, right after the warm lookups: a fixed
    // computation about as long as a fuzzy lookup, timed the same way. (Not
    // interleaved with the lookups: that slowed them and shifted when the
    // periodic full re-stat falls.)
    let control_rounds = calibrate(Duration::from_micros(400));
    let mut control: Vec<Duration> = (0..2000)
        .map(|_| {
            let t = Instant::now();
            std::hint::black_box(fixed_work(control_rounds));
            t.elapsed()
        })
        .collect();
    control.sort();
    let hits: Vec<Duration> = {
        let mut h = hit_times.clone();
        h.sort();
        h
    };

    let mut comp = Vec::new();
    for i in 0..2000 {
        let s = &sessions[(rng.next() % n as u64) as usize];
        let name = s.name.to_lowercase();
        let len = 1 + i % 6;
        let prefix: String = name.chars().take(len).collect();
        let t = Instant::now();
        let got = catalog.complete(&sdir, &mdir, &s.cwd, None, &prefix, 10);
        comp.push(t.elapsed());
        assert!(!got.is_empty() || prefix.is_empty());
    }
    comp.sort();

    // Machine jitter: a fixed workload with no catalog involved, about as long
    // as a warm id lookup (the project directories stat'd 4 times), timed the
    // same way. On a loaded machine any operation this long is preempted now
    // and then, which sets p99 regardless of what it does.
    let project_dirs: Vec<std::path::PathBuf> = std::fs::read_dir(&sdir)
        .expect("read_dir")
        .flatten()
        .map(|e| e.path())
        .collect();
    let mut jitter = Vec::new();
    for _ in 0..4000 {
        let t = Instant::now();
        for _ in 0..4 {
            for d in &project_dirs {
                let _ = std::fs::metadata(d);
            }
        }
        jitter.push(t.elapsed());
    }
    jitter.sort();

    println!(
        "\nsummary ({n} sessions, {} indexed)",
        catalog.len(&sdir, &mdir)
    );
    println!(
        "  first-ever resolution, no index yet: by id p50 of 3 {:.1} ms (max {:.1}), by exact name p50 {:.1} ms (max {:.1})",
        ms(pct(&first_id, 0.5)),
        ms(*first_id.last().unwrap_or(&Duration::ZERO)),
        ms(pct(&first_name, 0.5)),
        ms(*first_name.last().unwrap_or(&Duration::ZERO))
    );
    for (what, times) in [
        ("by id", &cold_id),
        ("by exact name", &cold_name),
        ("by fuzzy text", &cold_fuzzy),
    ] {
        println!(
            "  cold (fresh catalog, index on disk) {what}: p50 of 5 {:.1} ms, max {:.1} ms   target <= 300 ms  ratio {:.2}",
            ms(pct(times, 0.5)),
            ms(*times.last().unwrap_or(&Duration::ZERO)),
            ms(*times.last().unwrap_or(&Duration::ZERO)) / 300.0
        );
    }
    println!(
        "  full build of the index (session_start refresh): {:.1} ms",
        ms(full_build)
    );
    println!(
        "  floor: reading all {} files ({:.1} MB) without parsing took {:.1} ms on this machine",
        2 * n,
        bytes as f64 / 1e6,
        ms(raw_read)
    );
    println!(
        "  warm resolution (all kinds): p50 {:.3} ms  p99 {:.3} ms   target p99 <= 5 ms  ratio {:.2}",
        ms(pct(&all, 0.5)),
        ms(warm_p99),
        ms(warm_p99) / 5.0
    );
    println!(
        "  warm resolution (all kinds), thread CPU time: p50 {:.3} ms  p99 {:.3} ms  max {:.3} ms   target p99 <= 5 ms  ratio {:.2}",
        ms(pct(&all_cpu, 0.5)),
        ms(pct(&all_cpu, 0.99)),
        ms(*all_cpu.last().unwrap_or(&Duration::ZERO)),
        ms(pct(&all_cpu, 0.99)) / 5.0
    );
    println!(
        "  warm resolution, resolved references only: p50 {:.3} ms  p99 {:.3} ms (a miss looks in the files and updates the index)",
        ms(pct(&hits, 0.5)),
        ms(pct(&hits, 0.99))
    );
    println!(
        "  machine noise right after the warm lookups: a fixed computation took p50 {:.3} ms  p99 {:.3} ms  max {:.3} ms",
        ms(pct(&control, 0.5)),
        ms(pct(&control, 0.99)),
        ms(*control.last().unwrap_or(&Duration::ZERO))
    );
    println!(
        "  machine jitter: {} stat calls, no catalog: p50 {:.3} ms  p99 {:.3} ms (same timing loop)",
        4 * project_dirs.len(),
        ms(pct(&jitter, 0.5)),
        ms(pct(&jitter, 0.99))
    );
    println!(
        "  completion (1-6 char prefixes, limit 10): p50 {:.3} ms  p99 {:.3} ms",
        ms(pct(&comp, 0.5)),
        ms(pct(&comp, 0.99))
    );
}
