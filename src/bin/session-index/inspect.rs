//! `session-index inspect FILE [--leaf ID]`.

use std::path::PathBuf;

use serde::Serialize;
use session_index::session::{self, Warnings};
use session_index::views::{self, FilesTouched};

#[derive(clap::Args)]
pub struct Args {
    /// A pi session file (.jsonl).
    file: PathBuf,
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

pub fn run(args: Args) -> Result<(), String> {
    let s = session::open(&args.file).map_err(|e| e.to_string())?;
    let leaf_id = args.leaf.clone().or_else(|| s.default_leaf_id().map(str::to_string));
    let branch = s.branch(leaf_id.as_deref());
    if let (Some(leaf), true) = (&args.leaf, branch.is_empty()) {
        return Err(format!("{}: no entry with id {leaf}", args.file.display()));
    }
    let context = s.context_refs(&branch);
    let report = Report {
        id: s.header.id.clone(),
        name: s.session_name(&branch),
        leaf_id,
        branch_ids: branch.iter().map(|e| e.id.clone()).collect(),
        context_roles: context.iter().map(|m| m.message.role()).collect(),
        serialized: views::serialize_context_refs(&context),
        files: views::files_touched(&branch),
        warnings: s.warnings.clone(),
    };
    let json = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
    println!("{json}");
    Ok(())
}
