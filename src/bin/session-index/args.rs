//! What the subcommands share: pi's agent directory, the config file, and
//! session arguments given as paths or as the references `@@` takes.

use std::path::{Path, PathBuf};

use session_index::config::Config;
use session_index::resolve::Catalog;
use session_index::store::{Gate, Store, UpdateReport};

use crate::Failure;

#[derive(clap::Args, Debug)]
pub struct AgentDir {
    /// pi's agent directory (default: $PI_CODING_AGENT_DIR, else ~/.pi/agent).
    #[arg(long = "agent-dir", value_name = "DIR")]
    dir: Option<PathBuf>,
}

impl AgentDir {
    /// pi's `getAgentDir`: `--agent-dir`, `$PI_CODING_AGENT_DIR` (`~` expanded) or `~/.pi/agent`.
    pub fn path(&self) -> Result<PathBuf, Failure> {
        let dir = self.dir.clone().or_else(pi_ext_abi::protocol::agent_dir);
        dir.ok_or_else(|| Failure::Usage("HOME is not set; pass --agent-dir".into()))
    }
}

/// The config: `--config`, else the user's `<agent dir>/session-index.config.json`
/// if present (a file must hold a JSON object, as the host requires), else the defaults.
pub fn config(explicit: Option<&Path>, agent_dir: &Path) -> Result<Config, Failure> {
    let user = agent_dir.join("session-index.config.json");
    let Some(path) = explicit.or(user.is_file().then_some(user.as_path())) else {
        return Ok(Config::default());
    };
    let text = regular_files::read_regular(path)
        .and_then(|b| {
            String::from_utf8(b)
                .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
        })
        .map_err(|e| {
            Failure::Usage(format!(
                "{}: cannot read the config file: {e}",
                path.display()
            ))
        })?;
    session_index::config::parse_file(&text).map_err(|problems| {
        Failure::Usage(format!(
            "{}: invalid config: {}",
            path.display(),
            problems.join("; ")
        ))
    })
}

/// The search index of the agent directory `dir` (the one store of what is known about
/// sessions), keeping out what the config's `privacy.exclude` names, brought
/// up to date for at most a second unless `wait` ([`stale_note`] says what is left).
pub fn index(
    cmd: &'static str,
    dir: &Path,
    file: Option<&Path>,
    wait: bool,
) -> Result<(Store, UpdateReport), Failure> {
    // Stored paths are absolute, whichever way the directory was named.
    let agent_dir = std::path::absolute(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    // The library's warnings (a file skipped, the index rebuilt) go to stderr, as `index` prints them.
    session_index::plugin::logging::to_stderr(&format!("session-index {cmd}"));
    let config = config(file, &agent_dir)?;
    let mut index = Store::open_configured(&agent_dir, &config).map_err(|e| e.to_string())?;
    let budget = (!wait).then(|| std::time::Duration::from_secs(1));
    let (sessions, metas) = (agent_dir.join("sessions"), agent_dir.join("sessions-meta"));
    let report = index
        .update(&sessions, &metas, budget)
        .map_err(|e| e.to_string())?;
    Ok((index, report))
}

/// Before any thread starts: the thread count candle's matrix products
/// assume (read from `RAYON_NUM_THREADS`; without it, candle reads
/// /proc/cpuinfo at every product). A value the user set is kept.
pub fn encoder_threads(threads: usize) {
    if std::env::var_os("RAYON_NUM_THREADS").is_none() {
        // Safe: called first thing in `main`'s command, before any thread.
        std::env::set_var("RAYON_NUM_THREADS", threads.to_string());
    }
}

/// After the output: how many changed sessions the index does not hold yet.
pub fn stale_note(report: &UpdateReport) {
    if report.stale > 0 {
        eprintln!(
            "session-index: {} changed sessions are not in the index yet (updating stopped after 1 s); \
             run again, or pass --wait",
            report.stale
        );
    }
}

/// Print to stdout: every command's output goes through here, never
/// `println!`, which panics once the reader went away (`| head`). Output
/// is then dropped quietly, and the command finishes its work.
///
/// What is printed is redacted here, whatever it holds: session text comes
/// from the reader already redacted, but paths, project directories and meta
/// files do not, and a new field cannot forget it.
pub fn out(text: &str) {
    use std::io::Write;
    let text = session_index::redact::redact(text);
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
}

/// Session files for `refs`: an existing file is taken when it is inside the
/// sessions directory (nothing else is ever read); anything else resolves as
/// after `@@` (id, id prefix, name, slug, fuzzy), preferring the current
/// directory's project, among the sessions of `agent_dir` only.
pub fn session_files(agent_dir: &Path, refs: &[String]) -> Vec<Result<PathBuf, String>> {
    // The index it updates keeps out what the user's privacy.exclude names.
    let config = config(None, agent_dir).ok();
    let catalog = Catalog::new().excluding(&config.unwrap_or_default().privacy);
    let (sessions, metas) = (agent_dir.join("sessions"), agent_dir.join("sessions-meta"));
    let cwd = std::env::current_dir()
        .map(|d| d.to_string_lossy().into_owned())
        .unwrap_or_default();
    let gate = Gate::new(&sessions, &Default::default());
    refs.iter()
        .map(|r| {
            if Path::new(r).is_file() {
                return inside_sessions(&gate, &sessions, Path::new(r));
            }
            catalog
                .resolve(&sessions, &metas, &cwd, r)
                .map(|e| e.entry.path)
                .map_err(|e| e.to_string())
        })
        .collect()
}

/// `file` (an existing file named on the command line) with its symlinks
/// resolved, when the gate finds it inside `sessions`: the containment check
/// every path from the store passes (a link inside pointing out is outside).
fn inside_sessions(gate: &Gate, sessions: &Path, file: &Path) -> Result<PathBuf, String> {
    let real = std::fs::canonicalize(file).map_err(|e| format!("{}: {e}", file.display()))?;
    if gate.inside(&real) {
        return Ok(real);
    }
    Err(format!(
        "{}: outside the sessions directory {}; only pi's session files there are read",
        file.display(),
        sessions.display()
    ))
}

/// One session argument (see [`session_files`]).
pub fn session_file(agent_dir: &Path, reference: &str) -> Result<PathBuf, Failure> {
    let found = session_files(agent_dir, std::slice::from_ref(&reference.to_string())).pop();
    found
        .unwrap_or_else(|| Err(format!("no session matches \"{reference}\"")))
        .map_err(Failure::Failed)
}
