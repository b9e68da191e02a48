//! What the subcommands share: pi's agent directory, the config file, and
//! session arguments given as paths or as the references `@@` takes.

use std::path::{Path, PathBuf};

use session_index::config::Config;
use session_index::features::semantic::Semantic;
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
    /// One check for every command, before anything is read or created: it
    /// holds pi's `sessions/` directory (a typo is an error, not an empty list
    /// and a new index in a wrong place).
    pub fn path(&self) -> Result<PathBuf, Failure> {
        let dir = self.dir.clone().or_else(pi_ext_abi::protocol::agent_dir);
        let dir = dir.ok_or_else(|| Failure::Usage("HOME is not set; pass --agent-dir".into()))?;
        if !dir.join("sessions").is_dir() {
            return Err(Failure::Usage(format!(
                "{}: not a pi agent directory (no sessions/ in it); pass --agent-dir or set PI_CODING_AGENT_DIR",
                dir.display()
            )));
        }
        Ok(dir)
    }
}

/// The config file's text and path: `--config`, else the user's
/// `<agent dir>/session-index.config.json` if present; `None`: no file (the defaults).
fn config_file(
    explicit: Option<&Path>,
    agent_dir: &Path,
) -> Result<Option<(String, PathBuf)>, Failure> {
    let user = agent_dir.join("session-index.config.json");
    let Some(path) = explicit.or(user.is_file().then_some(user.as_path())) else {
        return Ok(None);
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
    Ok(Some((text, path.to_path_buf())))
}

/// The config that applies (`--config`, else the user's, else the defaults):
/// a bad key takes its default with one warning on stderr naming the file and
/// the key's full path, and the rest applies; a file that cannot be used (it
/// must hold a JSON object, as the host requires), or a bad key guarding
/// privacy or money, stops the command (exit code 2).
pub fn config(explicit: Option<&Path>, agent_dir: &Path) -> Result<Config, Failure> {
    let Some((text, path)) = config_file(explicit, agent_dir)? else {
        return Ok(Config::default());
    };
    let loaded = session_index::config::load_file(&text);
    let problems = loaded.problems.join("; ");
    if !loaded.usable {
        return Err(Failure::Usage(format!(
            "{}: invalid config: {problems}",
            path.display()
        )));
    }
    if !problems.is_empty() {
        crate::width::note(&format!(
            "session-index: warning: {}: {problems}. The rest of the config applies.",
            path.display()
        ));
    }
    Ok(loaded.config)
}

/// An agent directory's store, brought up to date, and the config it was
/// opened under.
pub struct Opened {
    pub store: Store,
    pub report: UpdateReport,
    pub config: Config,
    /// `dir` made absolute.
    pub agent_dir: PathBuf,
}

impl Opened {
    /// Whether search ranks by meaning too, under this config.
    pub fn semantic(&self) -> Semantic {
        Semantic::of(&self.agent_dir, &self.config.search)
    }
}

/// The search index of the agent directory `dir` (the one store of what is known about
/// sessions), keeping out what the config's `privacy.exclude` names, brought
/// up to date for at most a second unless `wait` ([`stale_note`] says what is left).
/// Without `wait`, a full pass over the files younger than
/// [`session_index::store::FULL_PASS_EVERY`] is trusted ([`Store::catch_up`]).
pub fn index(
    cmd: &'static str,
    dir: &Path,
    file: Option<&Path>,
    wait: bool,
) -> Result<Opened, Failure> {
    // Stored paths are absolute, whichever way the directory was named.
    let agent_dir = std::path::absolute(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    // The library's warnings (a file skipped, the index rebuilt) go to stderr, as `index` prints them.
    session_index::plugin::logging::to_stderr(&format!("session-index {cmd}"));
    let config = config(file, &agent_dir)?;
    let mut index = Store::open_configured(&agent_dir, &config).map_err(|e| e.to_string())?;
    let (sessions, metas) = (agent_dir.join("sessions"), agent_dir.join("sessions-meta"));
    let report = if wait {
        index.update(&sessions, &metas, None)
    } else {
        index.catch_up(&sessions, &metas, Some(std::time::Duration::from_secs(1)))
    }
    .map_err(|e| e.to_string())?;
    Ok(Opened {
        store: index,
        report,
        config,
        agent_dir,
    })
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

/// After the output: how many changed sessions the index does not hold yet,
/// and whether removed sessions' text is still in its bytes.
pub fn stale_note(report: &UpdateReport) {
    if let Some(scrub) = report.scrub.describe() {
        crate::width::note(&format!("session-index: {scrub}"));
    }
    if report.stale > 0 {
        crate::width::note(&format!(
            "session-index: {} changed sessions are not in the index yet (updating stopped after 1 s); \
             run again, or pass --wait",
            report.stale
        ));
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
    let config = config_file(None, agent_dir)
        .ok()
        .flatten()
        .map(|(text, _)| session_index::config::load_file(&text).config)
        .unwrap_or_default();
    let catalog = Catalog::new().excluding(&config.privacy);
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

/// Ask `question` on the terminal (`[y/N]`); without a terminal, stop with
/// `without_terminal` (exit code 2: the command needs `--yes`).
pub fn ask(question: &str, without_terminal: &str) -> Result<bool, Failure> {
    use std::io::{BufRead, IsTerminal, Write};
    if !std::io::stdin().is_terminal() {
        return Err(Failure::Usage(without_terminal.into()));
    }
    out(&format!("{question} [y/N] "));
    let _ = std::io::stdout().flush();
    let mut answer = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut answer)
        .map_err(|e| Failure::Failed(format!("cannot read the answer: {e}")))?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes" | "Yes"))
}
