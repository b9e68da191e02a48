//! `session-index list [--agent-dir DIR] [--cwd CWD | --all]`.

use std::path::PathBuf;

use session_index::session::discovery;

#[derive(clap::Args)]
pub struct Args {
    /// pi's agent directory (default: $PI_CODING_AGENT_DIR, else ~/.pi/agent).
    #[arg(long)]
    agent_dir: Option<PathBuf>,
    /// Project directory whose sessions to list (default: the current directory).
    #[arg(long, conflicts_with = "all")]
    cwd: Option<String>,
    /// List the sessions of every project.
    #[arg(long)]
    all: bool,
}

/// pi's `getAgentDir`: `$PI_CODING_AGENT_DIR` (with `~` expanded) or `~/.pi/agent`.
pub(crate) fn default_agent_dir() -> Result<PathBuf, String> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    if let Some(dir) = std::env::var_os("PI_CODING_AGENT_DIR").filter(|d| !d.is_empty()) {
        let dir = dir.to_string_lossy().into_owned();
        return Ok(match (dir.strip_prefix('~'), &home) {
            (Some(rest), Some(home)) => home.join(rest.trim_start_matches('/')),
            _ => PathBuf::from(dir),
        });
    }
    home.map(|h| h.join(".pi").join("agent")).ok_or_else(|| "HOME is not set; pass --agent-dir".to_string())
}

pub fn run(args: Args) -> Result<(), String> {
    let agent_dir = match args.agent_dir {
        Some(dir) => dir,
        None => default_agent_dir()?,
    };
    let sessions_dir = agent_dir.join("sessions");
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
        discovery::list_project(&sessions_dir, &cwd)
    };
    let json = serde_json::to_string_pretty(&sessions).map_err(|e| e.to_string())?;
    println!("{json}");
    Ok(())
}
