//! Evidence recall of query_session's assembled context versus a plain
//! newest-160 KB tail of the same (active) branch, on the QA fixture.
//!
//! `cargo run --release --example query_recall [-- <budget tokens> [<question id to dump>]]`
//!
//! With a question id, prints that question's assembled context and offline
//! answer instead of the table.

#[path = "../tests/support/qa.rs"]
mod qa;

fn main() {
    let budget: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(8000);
    if let Some(id) = std::env::args().nth(2) {
        let (text, answer, millis) = qa::dump(&id, budget);
        println!(
            "{text}\n==== offline answer ({millis:.1} ms to open, assemble and answer)\n{answer}"
        );
        return;
    }
    let timings = qa::time_sessions(budget, 5);
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
