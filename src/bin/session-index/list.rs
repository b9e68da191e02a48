//! `session-index list [--cwd CWD | --all] [--json] [--wait]`: sessions as a
//! table, newest first (pi's "modified": last activity), from the one store
//! (the search index's `sessions` table, brought up to date first for at
//! most a second, as `search` does), with what their meta says (model, cost).

use session_index::resolve::unique_prefixes;
use session_index::session::discovery;
use session_index::store::SessionRecord;
use session_index::text::{flat, home_relative, Keep};

use crate::args::AgentDir;
use crate::width::{table, Wide};
use crate::Failure;

#[derive(clap::Args)]
#[command(
    after_help = "Examples:\n  session-index list                the project in the current directory\n  \
session-index list --all --json   every project, for scripts"
)]
pub struct Args {
    #[command(flatten)]
    agent: AgentDir,
    /// Project directory whose sessions to list (default: the current directory).
    #[arg(long, conflicts_with = "all")]
    cwd: Option<String>,
    /// List the sessions of every project.
    #[arg(long)]
    all: bool,
    /// One JSON array (each session as the index holds it: pi's fields, its meta's name, summary, tags,
    /// `model` and `costUsd`; the first message redacted and clipped).
    #[arg(long)]
    json: bool,
    /// Check every session file and finish bringing the index up to date first, however long it takes.
    #[arg(long)]
    wait: bool,
    #[command(flatten)]
    wide: Wide,
}

pub fn run(args: Args) -> Result<(), Failure> {
    let agent_dir = args.agent.path()?;
    let crate::args::Opened {
        store: index,
        report,
        ..
    } = crate::args::index("list", &agent_dir, None, args.wait)?;
    let mut rows: Vec<SessionRecord> = index.records().map_err(|e| e.to_string())?;
    if !args.all {
        let here =
            std::env::current_dir().map_err(|e| format!("cannot read the current directory: {e}"));
        let cwd = args
            .cwd
            .map_or_else(|| here.map(|d| d.to_string_lossy().into_owned()), Ok)?;
        rows.retain(|r| discovery::in_project(&r.path, &cwd));
        if rows.is_empty() && !args.json {
            let sessions = agent_dir.join("sessions");
            crate::width::note(&format!(
                "session-index: no sessions for {cwd} in {} (--all lists every project)",
                sessions.display()
            ));
        }
    }
    rows.sort_by(|a, b| {
        b.last_activity_ms
            .cmp(&a.last_activity_ms)
            .then_with(|| a.path.cmp(&b.path))
    });
    if args.json {
        crate::args::out(&format!(
            "{}\n",
            serde_json::to_string_pretty(&rows).map_err(|e| e.to_string())?
        ));
    } else {
        let mut cells = vec![["ID", "NAME", "PROJECT", "DATE", "MSGS", "MODEL", "COST"]
            .map(String::from)
            .to_vec()];
        let ids = unique_prefixes(&rows.iter().map(|r| r.id.as_str()).collect::<Vec<_>>());
        for (s, id) in rows.iter().zip(ids) {
            cells.push(vec![
                id,
                flat(&s.title()),
                flat(&home_relative(&s.cwd)),
                date(s.last_activity_ms),
                s.message_count.to_string(),
                s.model.clone().unwrap_or_else(|| "-".into()),
                s.cost_usd
                    .map_or_else(|| "-".into(), |c| format!("${c:.4}")),
            ]);
        }
        // The widest columns (name, project) give up what the terminal lacks.
        let keep = [Keep::Head, Keep::Head, Keep::Tail];
        crate::args::out(&table(&cells, &keep, args.wide.columns()));
    }
    crate::args::stale_note(&report);
    Ok(())
}

/// `YYYY-MM-DD HH:MM` (UTC) of a time in ms since the epoch.
pub fn date(ms: u64) -> String {
    session_index::time::iso_from_millis(ms as i64)
        .chars()
        .take(16)
        .collect::<String>()
        .replace('T', " ")
}
