//! `session-index list [--cwd CWD | --all] [--json]`: sessions as a table,
//! newest first, with what their meta file says (model, cost).

use serde::Serialize;
use session_index::meta;
use session_index::session::discovery::{self, SessionSummary};
use session_index::text::{clip, flat, home_relative, Keep};

use crate::args::AgentDir;
use crate::Failure;

#[derive(clap::Args)]
#[command(after_help = "Examples:\n  session-index list                the project in the current directory\n  \
session-index list --all --json   every project, for scripts")]
pub struct Args {
    #[command(flatten)]
    agent: AgentDir,
    /// Project directory whose sessions to list (default: the current directory).
    #[arg(long, conflicts_with = "all")]
    cwd: Option<String>,
    /// List the sessions of every project.
    #[arg(long)]
    all: bool,
    /// One JSON array (the session as pi lists it, plus `model` and `costUsd` from its meta file).
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Row {
    #[serde(flatten)]
    session: SessionSummary,
    /// The model that wrote the meta file; none when the session is not indexed.
    model: Option<String>,
    cost_usd: Option<f64>,
    #[serde(skip)]
    meta_name: Option<String>,
}

pub fn run(args: Args) -> Result<(), Failure> {
    let agent_dir = args.agent.path()?;
    let sessions_dir = agent_dir.join("sessions");
    // Files skipped (not regular, or outside the sessions directory) are noted as `index` notes them.
    let agent = agent_dir.to_string_lossy().into_owned();
    session_index::logging::forward_to(std::sync::Arc::new(crate::index::CliHost {
        agent_dir: agent,
        command: "list",
    }));
    let sessions = if args.all {
        discovery::list_all(&sessions_dir)
    } else {
        let cwd = match args.cwd {
            Some(cwd) => cwd,
            None => std::env::current_dir()
                .map_err(|e| format!("cannot read the current directory: {e}"))?
                .to_string_lossy()
                .into_owned(),
        };
        let found = discovery::list_project(&sessions_dir, &cwd);
        if found.is_empty() && !args.json {
            eprintln!("session-index: no sessions for {cwd} in {} (--all lists every project)", sessions_dir.display());
        }
        found
    };
    let meta_dir = agent_dir.join("sessions-meta");
    let rows: Vec<Row> = sessions
        .into_iter()
        .map(|session| {
            let meta = meta::read(&meta_dir, &session.id).ok().flatten();
            let cost_usd = meta.as_ref().and_then(|m| m.usage.as_ref()).map(|u| u.cost_usd);
            let (model, meta_name) = meta.map(|m| (m.model, m.name)).unzip();
            Row { session, model, cost_usd, meta_name }
        })
        .collect();
    if args.json {
        println!("{}", serde_json::to_string_pretty(&rows).map_err(|e| e.to_string())?);
        return Ok(());
    }
    let mut cells = vec![["ID", "NAME", "PROJECT", "DATE", "MSGS", "MODEL", "COST"].map(String::from).to_vec()];
    let ids = short_ids(&rows.iter().map(|r| r.session.id.as_str()).collect::<Vec<_>>());
    for (row, id) in rows.iter().zip(ids) {
        let s = &row.session;
        let name = s.name.as_deref().or(row.meta_name.as_deref()).or(s.first_message.as_deref());
        let project = home_relative(&s.cwd);
        cells.push(vec![
            id,
            clip(&flat(name.unwrap_or("(empty)")), 48, Keep::Head),
            clip(&flat(&project), 32, Keep::Tail),
            date(s.last_activity_ms),
            s.message_count.to_string(),
            row.model.clone().unwrap_or_else(|| "-".into()),
            row.cost_usd.map_or_else(|| "-".into(), |c| format!("${c:.4}")),
        ]);
    }
    print!("{}", table(&cells));
    Ok(())
}

/// The shortest prefix (8 characters or more) of each id that no other listed
/// id shares: what to type after `@@` or `show` (pi's ids start with the time).
fn short_ids(ids: &[&str]) -> Vec<String> {
    let mut sorted = ids.to_vec();
    sorted.sort_unstable();
    let common = |a: &str, b: &str| a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count();
    let shortest = |id: &str| {
        let i = sorted.binary_search(&id).unwrap_or(0);
        let near = [i.checked_sub(1), Some(i + 1)].into_iter().flatten().filter_map(|j| sorted.get(j));
        near.map(|other| common(id, other) + 1).max().unwrap_or(0).max(8)
    };
    ids.iter().map(|id| id.chars().take(shortest(id)).collect()).collect()
}

/// Rows of cells as aligned columns (two spaces apart), the first row a header.
pub fn table(rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = Vec::new();
    for row in rows {
        widths.resize(widths.len().max(row.len()), 0);
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in rows {
        let line: Vec<String> = row.iter().zip(&widths).map(|(c, w)| format!("{c:<w$}")).collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    out
}

/// `YYYY-MM-DD HH:MM` (UTC) of a time in ms since the epoch.
pub fn date(ms: u64) -> String {
    session_index::time::iso_from_millis(ms as i64).chars().take(16).collect::<String>().replace('T', " ")
}
