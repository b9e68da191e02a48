use std::path::PathBuf;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "pi-ext-host")]
struct Cli {
    /// Plugin directory or plugin.toml.
    #[arg(long, global = true, default_value = ".")]
    plugin: PathBuf,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the plugin over a JSON-lines protocol on stdin/stdout (see SERVE.md).
    Serve(pi_ext_host::serve::ServeArgs),
}

fn main() {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Serve(args) => pi_ext_host::serve::run(&cli.plugin, args),
    };
    if let Err(message) = result {
        eprintln!("pi-ext-host: {message}");
        std::process::exit(1);
    }
}
