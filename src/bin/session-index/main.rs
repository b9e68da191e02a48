//! `session-index`: user-facing commands that need no host.
//! One module per subcommand; this file only parses and dispatches.

mod index;
mod inspect;
mod list;
mod search;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "session-index", version, about = "Session memory for the pi coding agent")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print what the reader sees in one session file, as one JSON document.
    Inspect(inspect::Args),
    /// List sessions (one project, or all) as JSON.
    List(list::Args),
    /// Index sessions into <agent dir>/sessions-meta (offline model unless one is available); prints JSON.
    Index(index::IndexArgs),
    /// Search past sessions by what was said in them (a persistent full-text index).
    Search(search::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Inspect(args) => inspect::run(args),
        Command::List(args) => list::run(args),
        Command::Index(args) => index::run(args),
        Command::Search(args) => search::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("session-index: {message}");
            ExitCode::FAILURE
        }
    }
}
