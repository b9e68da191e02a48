//! `session-index embed [--budget SECONDS] [--threads N]`: brings the search
//! index up to date, then embeds the passages waiting for their vectors
//! (semantic ranking), with progress on stderr. Stops when none is left or
//! the budget runs out; the next run goes on where it stopped. Searches meanwhile rank
//! with what is embedded.

use std::io::IsTerminal;
use std::path::Path;
use std::time::{Duration, Instant};

use session_index::features::semantic::{model_dir, Semantic, INSTALL};
use session_index::store::{EmbedReport, Store};

use crate::args::AgentDir;
use crate::Failure;

#[derive(clap::Args)]
#[command(after_help = "Examples:\n  session-index embed\n  session-index embed --budget 60")]
pub struct Args {
    #[command(flatten)]
    agent: AgentDir,
    /// Stop after this many seconds (default: when every passage is embedded).
    #[arg(long, value_name = "SECONDS")]
    budget: Option<u64>,
    /// Threads the encoder uses (default: 1, so the machine stays usable).
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// A session-index.config.json (its privacy.exclude keeps sessions out).
    #[arg(long)]
    config: Option<std::path::PathBuf>,
}

pub fn run(args: Args) -> Result<(), Failure> {
    let threads = args.threads.clamp(1, 64);
    crate::args::encoder_threads(threads);
    let agent_dir = args.agent.path()?;
    let mut opened = crate::args::index("embed", &agent_dir, args.config.as_deref(), true)?;
    let semantic = opened.semantic();
    let budget = args.budget.map(Duration::from_secs);
    let report = embed_pending(&mut opened.store, &agent_dir, &semantic, threads, budget)?;
    eprintln!(
        "session-index: embedded {} passages of {} turns; {} left",
        report.passages, report.rows, report.pending
    );
    Ok(())
}

/// Embed what is pending in `index` with progress on stderr. Semantic search
/// turned off, the model missing, or a model that does not load is a usage
/// error that says which, and what to do.
pub fn embed_pending(
    index: &mut Store,
    agent_dir: &Path,
    semantic: &Semantic,
    threads: usize,
    budget: Option<Duration>,
) -> Result<EmbedReport, Failure> {
    let Some(encoder) = index.encoder(threads) else {
        return Err(Failure::Usage(no_encoder(semantic, agent_dir)));
    };
    let started = Instant::now();
    let mut shown = Instant::now();
    let terminal = std::io::stderr().is_terminal();
    let mut progress = |report: &EmbedReport| {
        if shown.elapsed() < Duration::from_secs(2) {
            return;
        }
        shown = Instant::now();
        let rate = report.passages as f64 / started.elapsed().as_secs_f64().max(1e-3);
        let line = format!(
            "session-index: embedding: {} turns done, {} left ({rate:.0} passages/s)",
            report.rows, report.pending
        );
        if terminal {
            eprint!("\r{line}\x1b[K");
        } else {
            eprintln!("{line}");
        }
    };
    let report = index
        .embed_pending(&encoder, budget, &mut progress)
        .map_err(|e| e.to_string())?;
    if terminal {
        eprint!("\r\x1b[K");
    }
    Ok(report)
}

/// Why there is no encoder to embed with, and what to do about it.
pub fn no_encoder(semantic: &Semantic, agent_dir: &Path) -> String {
    match semantic {
        Semantic::Off => "semantic search is off: search.semantic is false in the config".into(),
        Semantic::NoModel => format!(
            "semantic search needs the model: run `{INSTALL}` (it goes to {})",
            model_dir(agent_dir).display()
        ),
        Semantic::On(dir) => format!(
            "the model in {} did not load (the warning above says why); \
             `session-index model status` checks its files",
            dir.display()
        ),
    }
}
