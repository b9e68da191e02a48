//! Evidence recall of query_session's assembled context versus a plain
//! newest-160 KB tail of the same (active) branch, on the QA fixture.
//!
//! `cargo run --release --example query_recall [-- <budget tokens> [<question id to dump>]]`
//!
//! With a question id, prints that question's assembled context and offline
//! answer instead of the table.

// The QA fixture of the integration tests, with the two modules it uses from its parent.
#[path = "../tests/support/qa.rs"]
mod qa;
#[path = "../tests/support/rng.rs"]
mod rng;
#[path = "../tests/support/shared_dir.rs"]
mod shared_dir;

fn main() {
    let budget: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(8000);
    if let Some(id) = std::env::args().nth(2) {
        let (text, answer, millis) = dump(&id, budget);
        println!(
            "{text}\n==== offline answer ({millis:.1} ms to open, assemble and answer)\n{answer}"
        );
        return;
    }
    let timings = time_sessions(budget, 5);
    let results = qa::run_all(budget);
    let n = results.len() as f64;
    println!(
        "{:<28} {:>8} {:>10} {:>8} {:>10} {:>9}",
        "question", "context", "ctx tok", "tail", "tail tok", "offline"
    );
    for r in &results {
        println!(
            "{:<28} {:>8} {:>10} {:>8} {:>10} {:>9}",
            r.id,
            if r.hit { "hit" } else { "MISS" },
            r.context_tokens,
            if r.tail_hit { "hit" } else { "MISS" },
            r.tail_tokens,
            if r.offline_cites_evidence {
                "cited"
            } else {
                "-"
            },
        );
    }
    let hits = results.iter().filter(|r| r.hit).count();
    let tail_hits = results.iter().filter(|r| r.tail_hit).count();
    let cited = results.iter().filter(|r| r.offline_cites_evidence).count();
    let forbidden_ctx: usize = results.iter().map(|r| r.forbidden_in_context.len()).sum();
    let forbidden_tail: usize = results.iter().map(|r| r.forbidden_in_tail.len()).sum();
    let file_hits = results.iter().filter(|r| r.file_tail_hit).count();
    let forbidden_file: usize = results.iter().map(|r| r.forbidden_in_file_tail.len()).sum();
    let questions_with_forbidden_file = results
        .iter()
        .filter(|r| !r.forbidden_in_file_tail.is_empty())
        .count();
    let mean = |f: &dyn Fn(&qa::Scored) -> usize| results.iter().map(f).sum::<usize>() as f64 / n;
    println!();
    println!("questions: {}", results.len());
    println!(
        "{:<36} {:>16} {:>18} {:>18}",
        "",
        format!("assembled {budget}t"),
        format!("branch tail {}K", qa::TAIL_BYTES / 1024),
        format!("file tail {}K", qa::TAIL_BYTES / 1024)
    );
    println!(
        "{:<36} {:>15.1}% {:>17.1}% {:>17.1}%",
        "evidence recall",
        hits as f64 * 100.0 / n,
        tail_hits as f64 * 100.0 / n,
        file_hits as f64 * 100.0 / n
    );
    println!(
        "{:<36} {:>16.0} {:>18.0} {:>18}",
        "mean context tokens (chars/4)",
        mean(&|r| r.context_tokens),
        mean(&|r| r.tail_tokens),
        "-"
    );
    println!(
        "{:<36} {:>16} {:>18} {:>18}",
        "abandoned-branch entries included", forbidden_ctx, forbidden_tail, forbidden_file
    );
    println!(
        "questions exposed to abandoned entries by the file tail: {questions_with_forbidden_file}"
    );
    println!(
        "offline answers citing an evidence entry: {cited}/{} = {:.1}%",
        results.len(),
        cited as f64 * 100.0 / n
    );
    println!();
    println!("open + assemble + offline answer, median of 5 runs per session:");
    for (name, bytes, millis) in timings {
        println!(
            "  {name:<60} {:>8.1} KB {millis:>8.2} ms",
            bytes as f64 / 1024.0
        );
    }
}

/// The assembled context and offline answer of one question, and the time
/// to open the session, assemble and answer (ms).
fn dump(question_id: &str, budget: usize) -> (String, String, f64) {
    let (questions, specs) = qa::load_fixture();
    let q = questions
        .iter()
        .find(|q| q.id == question_id)
        .unwrap_or_else(|| panic!("no question {question_id}"));
    let tmp = std::env::temp_dir().join(format!("session-index-qa-dump-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).expect("tmp dir");
    let paths = qa::session_paths(&specs, &tmp);
    let started = std::time::Instant::now();
    let session = session_index::session::open(&paths[&q.session]).expect("open");
    let prepared =
        session_index::features::query::prepare(&session, None, None, &q.question, budget)
            .expect("prepare");
    let answer = session_index::features::query::offline_answer(&prepared);
    let millis = started.elapsed().as_secs_f64() * 1000.0;
    let _ = std::fs::remove_dir_all(&tmp);
    (
        prepared.assembled.text,
        serde_json::to_string_pretty(&answer).unwrap_or_default(),
        millis,
    )
}

/// Per session of the fixture: (name, file bytes, median ms to open, assemble and answer offline).
fn time_sessions(budget: usize, runs: usize) -> Vec<(String, u64, f64)> {
    let (questions, specs) = qa::load_fixture();
    let tmp = std::env::temp_dir().join(format!("session-index-qa-time-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).expect("tmp dir");
    let paths = qa::session_paths(&specs, &tmp);
    let mut names: Vec<&String> = paths.keys().collect();
    names.sort();
    let mut out = Vec::new();
    for name in names {
        let path = &paths[name];
        let question = questions
            .iter()
            .find(|q| &q.session == name)
            .map(|q| q.question.clone())
            .unwrap_or_default();
        let mut samples: Vec<f64> = (0..runs)
            .map(|_| {
                let started = std::time::Instant::now();
                let session = session_index::session::open(path).expect("open");
                let prepared = session_index::features::query::prepare(
                    &session, None, None, &question, budget,
                )
                .expect("prepare");
                std::hint::black_box(session_index::features::query::offline_answer(&prepared));
                started.elapsed().as_secs_f64() * 1000.0
            })
            .collect();
        samples.sort_by(f64::total_cmp);
        let bytes = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
        let short = name.rsplit('/').next().unwrap_or(name).to_string();
        out.push((short, bytes, samples[samples.len() / 2]));
    }
    let _ = std::fs::remove_dir_all(&tmp);
    out
}
