//! `session-index`: user-facing commands that need no host.
//! One module per subcommand; this file only parses and dispatches.
//! Output goes through `args::out`, never `println!` (which panics under `| head`).
#![deny(clippy::print_stdout)]

mod args;
mod embed;
mod index;
mod inspect;
mod list;
mod model;
mod purge;
mod search;
mod show;
mod width;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

const EXIT_CODES: &str =
    "Examples:\n  session-index list --all\n  session-index show rate-limiter\n\n\
Exit codes: 0 ok; 1 some items failed (a session that could not be read or indexed, \
a reference that matches no session); 2 usage (bad arguments, an invalid config file).";

#[derive(Parser)]
#[command(name = "session-index", version, about = "Session memory for the pi coding agent", after_help = EXIT_CODES)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// List sessions (one project, or all) as a table, newest first.
    List(list::Args),
    /// Print one session's meta (name, summary, tags, decisions, files) readably.
    Show(show::Args),
    /// Index sessions into <agent dir>/sessions-meta (offline model unless one is available).
    Index(index::IndexArgs),
    /// Print what the reader sees in one session file, as one JSON document.
    Inspect(inspect::Args),
    /// Search past sessions by what was said in them (a persistent full-text index).
    Search(search::Args),
    /// Embed the passages of the search index for semantic ranking (needs the model).
    Embed(embed::Args),
    /// The sentence model that lets search find sessions by meaning: install, status, remove.
    Model(model::Args),
    /// Remove what session-index wrote (metas, the search index, models); asks first.
    Purge(purge::Args),
}

/// Why a command failed, and so its exit code.
#[derive(Debug)]
pub enum Failure {
    /// Exit code 1: some items (sessions, references) failed.
    Failed(String),
    /// Exit code 2: the command line or the config is wrong.
    Usage(String),
}

impl From<String> for Failure {
    fn from(message: String) -> Self {
        Failure::Failed(message)
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::List(args) => list::run(args),
        Command::Show(args) => show::run(args),
        Command::Index(args) => index::run(args),
        Command::Inspect(args) => inspect::run(args),
        Command::Search(args) => search::run(args),
        Command::Embed(args) => embed::run(args),
        Command::Model(args) => model::run(args),
        Command::Purge(args) => purge::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Failed(message)) => {
            eprintln!("session-index: {message}");
            ExitCode::from(1)
        }
        Err(Failure::Usage(message)) => {
            eprintln!("session-index: {message}");
            ExitCode::from(2)
        }
    }
}
