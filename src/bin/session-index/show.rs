//! `session-index show SESSION [--json]`: one session's meta file, for reading.

use serde_json::json;
use session_index::store::{meta, SessionRecord};

use crate::args::{session_file, AgentDir};
use crate::list::date;
use crate::width::{hang, Wide};
use crate::Failure;

#[derive(clap::Args)]
#[command(
    after_help = "Examples:\n  session-index show rate-limiter      by name slug\n  \
session-index show 019a3f2b --json   by id prefix; the session and its meta file as JSON"
)]
pub struct Args {
    /// A session file, or a reference as after `@@`: id, id prefix, name, slug.
    session: String,
    #[command(flatten)]
    agent: AgentDir,
    /// Print `{"session": …, "meta": … | null}` instead.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    wide: Wide,
}

pub fn run(args: Args) -> Result<(), Failure> {
    let agent_dir = args.agent.path()?;
    let file = session_file(&agent_dir, &args.session)?;
    let s = session_index::session::summarize(&file).map_err(|e| e.to_string())?;
    let meta = meta::read(&agent_dir.join("sessions-meta"), &s.id).map_err(|e| e.to_string())?;
    if args.json {
        let doc = json!({ "session": s, "meta": meta });
        crate::args::out(&format!(
            "{}\n",
            serde_json::to_string_pretty(&doc).map_err(|e| e.to_string())?
        ));
        return Ok(());
    }
    // The title every view shows: the meta's name, else pi's, else the first message's.
    let record = SessionRecord {
        id: s.id.clone(),
        name: meta.as_ref().map(|m| m.name.clone()),
        session_name: s.name.clone(),
        first_message: s
            .first_message
            .as_deref()
            .map(|m| session_index::redact::session_text(m).into_owned()),
        ..SessionRecord::default()
    };
    let width = args.wide.columns();
    let mut out = format!("{}\n", hang("", &record.title(), width));
    // `  key       value`, the value wrapped under itself.
    let field = |out: &mut String, key: &str, value: String| {
        out.push_str(&format!(
            "{}\n",
            hang(&format!("  {key:<9} "), &value, width)
        ));
    };
    field(&mut out, "id", s.id.clone());
    field(&mut out, "file", s.path.display().to_string());
    field(&mut out, "project", s.cwd.clone());
    field(&mut out, "created", s.created.clone());
    field(
        &mut out,
        "active",
        format!(
            "{} UTC, {} messages",
            date(s.last_activity_ms),
            s.message_count
        ),
    );
    let Some(m) = meta else {
        let short: String = s.id.chars().take(8).collect();
        crate::args::out(&format!(
            "{out}\nNot indexed yet: session-index index {short}\n"
        ));
        return Ok(());
    };
    let usage = m.usage.unwrap_or_default();
    let cost = format!(
        "${:.4} ({} in / {} out tokens)",
        usage.cost_usd, usage.input_tokens, usage.output_tokens
    );
    field(
        &mut out,
        "indexed",
        format!("{} by {}, {cost}", m.updated_at, m.model),
    );
    field(&mut out, "tags", m.tags.join(", "));
    out.push_str(&format!(
        "\n{}\n\n{}\n",
        paragraphs(&m.description, width),
        paragraphs(m.summary.trim_end(), width)
    ));
    let files = m.files.unwrap_or_default();
    for (title, items) in [
        ("Decisions", m.decisions),
        ("Open tasks", m.open_tasks),
        ("Files modified", files.modified),
        ("Files read", files.read),
    ] {
        if !items.is_empty() {
            out.push_str(&format!("\n{title}\n"));
            items
                .iter()
                .for_each(|i| out.push_str(&format!("{}\n", hang("  - ", i, width))));
        }
    }
    crate::args::out(&out);
    Ok(())
}

/// Each line of `text` wrapped to `width` (blank lines and the indent of
/// `- ` items kept).
fn paragraphs(text: &str, width: Option<usize>) -> String {
    text.lines()
        .map(|line| {
            let rest = line.trim_start();
            let indent = &line[..line.len() - rest.len()];
            match rest.strip_prefix("- ") {
                Some(item) => hang(&format!("{indent}- "), item, width),
                None => hang(indent, rest, width),
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}
