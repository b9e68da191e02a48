//! `session-index`: command-line tools over pi sessions and their meta files.

mod index;

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
    /// Index sessions: write <agent dir>/sessions-meta/<id>.meta.json (offline model unless one is available).
    Index(index::IndexArgs),
}

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Index(args) => index::run(args),
    }
}
