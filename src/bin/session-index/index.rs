//! `session-index index`: write meta files for sessions, outside pi.
//!
//! Uses the offline model unless a configured model is available (API key in
//! the environment), exactly as the plugin would, and prints a JSON summary.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use pi_ext_abi::protocol::{CompletionRequest, CompletionResponse, SessionContext};
use pi_ext_abi::LogLevel;
use serde_json::{json, Value};
use session_index::app::App;
use session_index::host::{HostApi, NotifyLevel};
use session_index::indexing::{index_session, IndexOutcome, IndexRequest};
use session_index::session::discovery;

#[derive(Debug, Args)]
pub struct IndexArgs {
    /// pi's agent directory (default: $PI_CODING_AGENT_DIR or ~/.pi/agent).
    #[arg(long, value_name = "DIR")]
    pub agent_dir: Option<PathBuf>,
    /// Index every session under <agent dir>/sessions.
    #[arg(long, conflicts_with = "files")]
    pub all: bool,
    /// Always use the offline model `local/extractive`.
    #[arg(long)]
    pub offline: bool,
    /// A session-index.config.json (default: built-in defaults).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Session files to index.
    #[arg(value_name = "FILES")]
    pub files: Vec<PathBuf>,
}

/// Prints the JSON summary; fails when any session could not be indexed.
pub fn run(args: IndexArgs) -> Result<(), String> {
    let agent_dir = args.agent_dir.clone().or_else(default_agent_dir).ok_or("cannot find the agent directory")?;
    let config_json = match &args.config {
        Some(path) => regular_files::read_regular(path)
            .and_then(|b| String::from_utf8(b).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e)))
            .map_err(|e| format!("{}: {e}", path.display()))?,
        None => "null".to_string(),
    };
    let host = Arc::new(CliHost { agent_dir: agent_dir.to_string_lossy().into_owned() });
    session_index::logging::forward_to(host.clone());
    let app = App::new(host, agent_dir.clone(), &config_json)?;
    if !app.config_ok() {
        return Err(format!("invalid config: {}", app.config_problems.join("; ")));
    }
    let sessions_dir = agent_dir.join("sessions");
    let files = if args.all { discovery::session_files(&sessions_dir) } else { args.files.clone() };
    if files.is_empty() && !args.all {
        return Err("nothing to index: pass --all or session files".into());
    }
    let meta_dir = agent_dir.join("sessions-meta");
    let mut indexed = Vec::new();
    let mut failed = Vec::new();
    for file in &files {
        // The containment rule of every reader: regular files inside the sessions directory.
        if let Err(e) = regular_files::inside(&sessions_dir, file) {
            failed.push(json!({"sessionFile": file.to_string_lossy(), "error": format!("{}: {e}", file.display())}));
            continue;
        }
        let request = IndexRequest {
            session_file: file.clone(),
            meta_dir: meta_dir.clone(),
            leaf_id: None,
            force: true,
            offline: args.offline,
        };
        match index_session(&app, &request, &|| {}) {
            Ok(IndexOutcome::Indexed(done)) => {
                if let Some(reason) = &done.fallback_reason {
                    if indexed.is_empty() {
                        eprintln!("session-index index: using the offline model ({reason})");
                    }
                }
                let meta = &done.meta;
                indexed.push(json!({
                    "sessionId": meta.session_id,
                    "sessionFile": meta.session_file,
                    "metaFile": done.path.to_string_lossy(),
                    "name": meta.name,
                    "tags": meta.tags,
                    "model": meta.model,
                    "incremental": done.incremental,
                    "usage": meta.usage,
                }));
            }
            Ok(IndexOutcome::Skipped { .. }) => {}
            Err(failure) => failed.push(json!({
                "sessionFile": file.to_string_lossy(),
                "model": failure.model,
                "error": failure.error.to_string(),
            })),
        }
    }
    let cost: f64 = indexed.iter().filter_map(|i| i["usage"]["costUsd"].as_f64()).sum();
    let summary = json!({
        "agentDir": agent_dir.to_string_lossy(),
        "metaDir": meta_dir.to_string_lossy(),
        "indexed": indexed,
        "failed": failed,
        "costUsd": cost,
    });
    println!("{}", serde_json::to_string_pretty(&summary).unwrap_or_default());
    match summary["failed"].as_array().map_or(0, Vec::len) {
        0 => Ok(()),
        n => Err(format!("{n} of {} session(s) could not be indexed", files.len())),
    }
}

fn default_agent_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("PI_CODING_AGENT_DIR").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir));
    }
    std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".pi").join("agent"))
}

/// The CLI as a host: no UI, no session to write to; warnings go to stderr.
struct CliHost {
    agent_dir: String,
}

impl HostApi for CliHost {
    fn context(&self) -> SessionContext {
        SessionContext { agent_dir: self.agent_dir.clone(), ..Default::default() }
    }
    fn set_status(&self, _key: &str, _text: Option<&str>) {}
    fn notify(&self, text: &str, level: NotifyLevel) {
        if level != NotifyLevel::Info {
            eprintln!("session-index index: {text}");
        }
    }
    fn append_entry(&self, _custom_type: &str, _data: &Value) {}
    fn set_session_name(&self, _name: &str) {}
    fn api_key(&self, _provider: &str) -> Option<String> {
        None
    }
    fn can_complete(&self) -> bool {
        false
    }
    fn complete(&self, _request: &CompletionRequest) -> Result<CompletionResponse, String> {
        Err("the CLI does not serve completions".into())
    }
    fn log(&self, level: LogLevel, _target: &str, message: &str) {
        if matches!(level, LogLevel::Warn | LogLevel::Error) {
            eprintln!("session-index index: {message}");
        }
    }
    fn wait_for_idle(&self, _timeout: Duration) -> bool {
        true
    }
}
