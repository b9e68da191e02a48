//! `session-index search QUERY [--project DIR | --all] [--since T] [--until T] [--limit N] [--json]`:
//! brings the search index up to date (for at most a second unless `--wait`;
//! trusting a full pass over the files younger than 10 minutes, see
//! `store/update/quick.rs`) and prints the matching sessions, best first.

use std::io::IsTerminal;

use session_index::features::semantic::Semantic;
use session_index::store::{self, Query, SessionHit};
use session_index::text::{clip, flat, home_relative, Keep};

use crate::args::AgentDir;
use crate::width::Wide;
use crate::Failure;

#[derive(clap::Args)]
#[command(
    after_help = "Query syntax: words (any matches, more rank higher), \"exact phrase\", -exclude, \
    file:PATH, tag:TAG.\nExamples:\n  session-index search sqlite wal busy\n  \
    session-index search '\"connection refused\"' file:src/db.rs --since 2w\n  \
    session-index search deploy -staging --all --json"
)]
pub struct Args {
    /// What to look for.
    #[arg(required = true, num_args = 1..)]
    query: Vec<String>,
    #[command(flatten)]
    agent: AgentDir,
    /// Only sessions of this project directory (default: every project, the current one ranked first).
    #[arg(long, conflicts_with = "all")]
    project: Option<String>,
    /// Every project, the current one not ranked first.
    #[arg(long)]
    all: bool,
    /// Sessions modified since: 2w, 3d, 12h, 6m, 1y ago, or a date (2026-11-01).
    #[arg(long)]
    since: Option<String>,
    /// Sessions modified until (same forms; a date includes its whole day).
    #[arg(long)]
    until: Option<String>,
    #[arg(long, default_value_t = 10)]
    limit: usize,
    /// One JSON document instead of a table.
    #[arg(long)]
    json: bool,
    /// Check every session file and finish bringing the index up to date
    /// first, however long it takes (with the model installed: embedding
    /// every passage too).
    #[arg(long)]
    wait: bool,
    /// A session-index.config.json (its privacy.exclude keeps sessions out).
    #[arg(long)]
    config: Option<std::path::PathBuf>,
    #[command(flatten)]
    wide: Wide,
}

pub fn run(args: Args) -> Result<(), Failure> {
    crate::args::encoder_threads(1);
    let now = session_index::time::now_ms();
    let time = |t: &Option<String>, end| {
        t.as_deref()
            .map(|t| store::parse_since(t, now, end))
            .transpose()
    };
    let cwd = std::env::current_dir()
        .ok()
        .map(|d| d.to_string_lossy().into_owned());
    let query = Query {
        project: args.project,
        current_cwd: cwd.filter(|_| !args.all),
        since_ms: time(&args.since, false).map_err(|e| e.to_string())?,
        until_ms: time(&args.until, true).map_err(|e| e.to_string())?,
        limit: args.limit.max(1),
        ..Query::parse(&args.query.join(" ")).map_err(|e| e.to_string())?
    };
    let agent_dir = args.agent.path()?;
    let opened = crate::args::index("search", &agent_dir, args.config.as_deref(), args.wait)?;
    let wanted = opened.semantic();
    let crate::args::Opened {
        store: mut index,
        report,
        ..
    } = opened;
    // Whether the ranking may be semantic: the model's files at their sizes
    // (the search loads the encoder itself only when the store holds
    // vectors; loading it here for this flag took ~80 ms of every search).
    let model = wanted.model().is_some();
    if args.wait && model {
        crate::embed::embed_pending(&mut index, &agent_dir, &wanted, 1, None)?;
    }
    let hits = index.search(&query).map_err(|e| e.to_string())?;
    let semantic = SemanticReport {
        model,
        status: index.embed_status().map_err(|e| e.to_string())?,
    };
    if args.json {
        let results: Vec<serde_json::Value> = hits
            .iter()
            .map(|h| {
                let mut v = serde_json::to_value(h).unwrap_or_default();
                v["reopen"] = reopen(h, None).into();
                v
            })
            .collect();
        let doc = serde_json::json!({ "results": results, "index": report, "semantic": semantic });
        crate::args::out(&format!(
            "{}\n",
            serde_json::to_string_pretty(&doc).map_err(|e| e.to_string())?
        ));
    } else {
        let colour = std::io::stdout().is_terminal();
        crate::args::out(&table(&hits, colour, args.wide.columns()));
    }
    crate::args::stale_note(&report);
    semantic.note(&wanted, &agent_dir);
    Ok(())
}

/// Whether the ranking was semantic too, and how much it had to rank with
/// (the `semantic` member of `--json`).
#[derive(serde::Serialize)]
struct SemanticReport {
    /// The model is installed (the ranking fuses lexical and semantic).
    model: bool,
    #[serde(flatten)]
    status: store::EmbedStatus,
}

impl SemanticReport {
    /// After the output: why the ranking was by words only and what to do
    /// (nothing when the user turned semantic search off), or how much it
    /// lacked.
    fn note(&self, wanted: &Semantic, agent_dir: &std::path::Path) {
        if !self.model {
            if *wanted != Semantic::Off {
                let why = crate::embed::no_encoder(wanted, agent_dir);
                crate::width::note(&format!("session-index: ranked by words only; {why}"));
            }
        } else if self.status.pending > 0 {
            crate::width::note(&format!(
                "session-index: semantic ranking used {} embedded turns, {} are not embedded yet; \
                 run `session-index embed`",
                self.status.embedded, self.status.pending
            ));
        }
    }
}

/// The command that reopens a hit: its file, or (when that line would not
/// fit) its id, which pi finds too.
fn reopen(hit: &SessionHit, width: Option<usize>) -> String {
    let path = hit.session.path.to_string_lossy();
    let by_path = if path.contains(|c: char| c.is_whitespace() || c == '\'') {
        format!("pi --session '{}'", path.replace('\'', "'\\''"))
    } else {
        format!("pi --session {path}")
    };
    match width {
        Some(w) if by_path.chars().count() + INDENT.len() > w => {
            format!("pi --session {}", hit.session.id)
        }
        _ => by_path,
    }
}

/// Where a hit's snippets and command start.
const INDENT: &str = "    ";

/// Each hit: `N. title  date  project` (title and project cut to fit `width`),
/// its snippets as one clean line each, and the command that reopens it.
fn table(hits: &[SessionHit], colour: bool, width: Option<usize>) -> String {
    use std::fmt::Write;
    if hits.is_empty() {
        return "No session matches.\n".into();
    }
    let mut out = String::new();
    let paint = |code: &str, text: &str| {
        if colour {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    };
    for (i, hit) in hits.iter().enumerate() {
        let s = &hit.session;
        let date = crate::list::date(s.last_activity_ms);
        let (title, project) = heading(&s.title(), &home_relative(&s.cwd), &date, width);
        let _ = writeln!(
            out,
            "{:>2}. {}  {}  {}",
            i + 1,
            paint("1", &title),
            paint("2", &date),
            project
        );
        for snippet in &hit.snippets {
            let entry = snippet
                .entry_id
                .as_deref()
                .map(|e| format!(" {e}"))
                .unwrap_or_default();
            let abandoned = if snippet.abandoned {
                ", abandoned branch"
            } else {
                ""
            };
            let label = format!("{}{entry}{abandoned}: ", snippet.role);
            let room = width.map(|w| w.saturating_sub(INDENT.len() + label.chars().count()));
            let (open, close) = if colour {
                ("\x1b[1;33m", "\x1b[0m")
            } else {
                ("**", "**")
            };
            let text = snippet.sentence_within(open, close, room);
            let _ = writeln!(out, "{INDENT}{}{text}", paint("2", &label));
        }
        let _ = writeln!(out, "{INDENT}{}", paint("36", &reopen(hit, width)));
    }
    out
}

/// A hit's title and project, cut (the title's end, the project's start) so
/// that `NN. title  date  project` fits `width`.
fn heading(title: &str, project: &str, date: &str, width: Option<usize>) -> (String, String) {
    let (title, project) = (flat(title), flat(project));
    let Some(width) = width else {
        return (title, project);
    };
    let room = width.saturating_sub("NN. ".len() + date.len() + 4);
    let (t, p) = (title.chars().count(), project.chars().count());
    if t + p <= room {
        return (title, project);
    }
    // The title gives up all but a third of the room first, then the project what is left.
    let title_room = t.min(room.saturating_sub(p.min(room / 3))).max(1);
    let project_room = room.saturating_sub(title_room).max(1);
    (
        clip(&title, title_room, Keep::Head),
        clip(&project, project_room, Keep::Tail),
    )
}
