//! Hostile-input bench (issue 24, "bounded resources on any input"): what
//! inputs built to be expensive cost, next to ordinary ones of the same size.
//!
//! - `@@` prompts: [`parse`] of 1 MB and 10 MB prompts of several shapes
//!   (50,000+ references, `@@` runs, unclosed quotes and backtick runs, one
//!   long line), with the time per MB next to an ordinary prose prompt's and
//!   the target (≤ 50 ms for 10 MB). A parse that is not linear shows as a
//!   10 MB time far above ten times the 1 MB one.
//!
//! Run: `cargo bench --bench hostile`. Without `--bench` (as under
//! `cargo test --all-targets`) it prints one line and exits.

use std::time::{Duration, Instant};

use session_index::resolve::syntax::parse;

/// The `@@` prompt target of issue 24.
const PARSE_TARGET: Duration = Duration::from_millis(50);
/// References honoured per prompt by default (`references.maxRefsPerPrompt` + 1 read).
const REFS_READ: usize = 4;

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        println!("hostile bench: not run outside `cargo bench --bench hostile`");
        return;
    }
    prompts();
}

/// A prompt of about `bytes` bytes: `unit` repeated.
fn repeated(unit: &str, bytes: usize) -> String {
    unit.repeat(bytes / unit.len() + 1)
}

/// The prompt shapes, by name, at about `bytes` bytes.
fn shapes(bytes: usize) -> Vec<(&'static str, String)> {
    let refs_in_prose = {
        let mut p = String::with_capacity(bytes + 64);
        let mut i = 0;
        while p.len() < bytes {
            p.push_str(&format!("see @@session-{i} and the notes about it. "));
            i += 1;
        }
        p
    };
    let lines = repeated("compare @@a with @@b: why?\n", bytes);
    vec![
        (
            "prose, no @@",
            repeated("the quick brown fox jumps over it. ", bytes),
        ),
        ("references in prose (one line)", refs_in_prose),
        ("one reference per short line", lines),
        ("bare @@ tokens", repeated("@@ ", bytes)),
        ("glued a@@b", repeated("a@@b", bytes)),
        ("unclosed quotes @@\"", repeated("@@\"x ", bytes)),
        ("backtick runs of many lengths", {
            let mut p = String::with_capacity(bytes + 64);
            let mut n = 1;
            while p.len() < bytes {
                p.push_str(&"`".repeat(n));
                p.push_str(" @@x ");
                n = n % 300 + 1;
            }
            p
        }),
        (
            "questions @@x: ...?",
            repeated("@@x: what changed in the deploy? ", bytes),
        ),
    ]
}

/// Median of `runs` timings of `parse(prompt)`.
fn time_parse(prompt: &str, runs: usize) -> Duration {
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            std::hint::black_box(parse(std::hint::black_box(prompt), REFS_READ));
            start.elapsed()
        })
        .collect();
    times.sort();
    times[runs / 2]
}

fn prompts() {
    println!("@@ parse (references.maxRefsPerPrompt 3: up to {REFS_READ} read), median of 5 runs");
    println!(
        "{:<34} {:>10} {:>10} {:>8} {:>10}  target",
        "shape", "1 MB ms", "10 MB ms", "ratio", "ms/MB"
    );
    let (small, large) = (shapes(1 << 20), shapes(10 << 20));
    let mut all_pass = true;
    for ((name, one), (_, ten)) in small.iter().zip(&large) {
        let (t1, t10) = (time_parse(one, 5), time_parse(ten, 5));
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let pass = t10 <= PARSE_TARGET;
        all_pass &= pass;
        println!(
            "{name:<34} {:>10.3} {:>10.3} {:>8.1} {:>10.3}  {}",
            ms(t1),
            ms(t10),
            ms(t10) / ms(t1).max(1e-6),
            ms(t10) / (ten.len() as f64 / (1 << 20) as f64),
            if pass {
                "≤ 50 ms: met"
            } else {
                "≤ 50 ms: MISSED"
            }
        );
    }
    println!(
        "@@ parse target (10 MB ≤ 50 ms, every shape): {}",
        if all_pass { "met" } else { "MISSED" }
    );
}
