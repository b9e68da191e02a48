//! `session-index inspect SESSION [--leaf ID]`.

use serde::Serialize;
use session_index::session::views::{self, FilesTouched};
use session_index::session::{self, Warnings};

use crate::args::{session_file, AgentDir};
use crate::Failure;

#[derive(clap::Args)]
#[command(
    after_help = "Examples:\n  session-index inspect rate-limiter          by name slug (also: id, id prefix, \"Quoted name\")\n  \
session-index inspect ~/.pi/agent/sessions/--home-me-proj--/2026-01-02T03-04-05-678Z_019a.jsonl --leaf e0000004"
)]
pub struct Args {
    /// A session file, or a reference as after `@@`: id, id prefix, name, slug.
    session: String,
    #[command(flatten)]
    agent: AgentDir,
    /// Entry id to use as the leaf (default: pi's, the last entry in the file).
    #[arg(long)]
    leaf: Option<String>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Report {
    id: String,
    name: Option<String>,
    leaf_id: Option<String>,
    branch_ids: Vec<String>,
    context_roles: Vec<&'static str>,
    serialized: String,
    files: FilesTouched,
    warnings: Warnings,
}

pub fn run(args: Args) -> Result<(), Failure> {
    let file = session_file(&args.agent.path()?, &args.session)?;
    let s = session::open(&file).map_err(|e| e.to_string())?;
    let leaf_id = args
        .leaf
        .clone()
        .or_else(|| s.default_leaf_id().map(str::to_string));
    let branch = s.branch(leaf_id.as_deref());
    if let (Some(leaf), true) = (&args.leaf, branch.is_empty()) {
        return Err(Failure::Usage(format!(
            "{}: no entry with id {leaf}",
            file.display()
        )));
    }
    let context: Vec<_> = s.context_refs(&branch).collect();
    let report = Report {
        id: s.header.id.clone(),
        name: s.session_name(&branch),
        leaf_id,
        branch_ids: branch.iter().map(|e| e.id.to_string()).collect(),
        context_roles: context.iter().map(|m| m.role()).collect(),
        serialized: views::serialize_context_refs(context),
        files: views::files_touched(&branch),
        warnings: s.warnings.clone(),
    };
    let json = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
    crate::args::out(&format!("{json}\n"));
    Ok(())
}
