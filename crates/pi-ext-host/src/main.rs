//! `pi-ext-host`: see the crate README. Prints one JSON document on success,
//! one `pi-ext-host: <message>` line on stderr and a non-zero exit otherwise.

use std::io::Write as _;
use std::process::ExitCode;

use clap::error::ErrorKind;
use clap::Parser;
use pi_ext_host::cli::{one_line_usage_error, run, Cli, Command};

fn fail(message: &str, code: u8) -> ExitCode {
    // Nothing sensible is left to do if stderr itself is gone.
    let _ = writeln!(std::io::stderr().lock(), "pi-ext-host: {message}");
    ExitCode::from(code)
}

fn main() -> ExitCode {
    // A host bug must still end in one line, not a multi-line panic report.
    std::panic::set_hook(Box::new(|info| {
        let message = pi_ext_abi::panic_message(info.payload());
        let _ = writeln!(
            std::io::stderr().lock(),
            "pi-ext-host: internal error: {}",
            message.replace('\n', " ")
        );
    }));
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) => {
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            return fail(
                "missing subcommand (info, event, prompt, tool, command, serve); see --help",
                2,
            )
        }
        Err(e) => return fail(&one_line_usage_error(&e.render().to_string()), 2),
    };
    if let Command::Serve(args) = &cli.command {
        // Long-running: stdout carries the protocol, not one result document.
        return match pi_ext_host::serve::run(&cli, args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => fail(&e.to_string(), 1),
        };
    }
    let outcome = std::panic::catch_unwind(|| run(&cli));
    match outcome {
        Ok(Ok(doc)) => {
            let text = serde_json::to_string_pretty(&doc).unwrap_or_else(|_| doc.to_string());
            let mut stdout = std::io::stdout().lock();
            if writeln!(stdout, "{text}")
                .and_then(|()| stdout.flush())
                .is_err()
            {
                return fail("cannot write to stdout", 1);
            }
            ExitCode::SUCCESS
        }
        Ok(Err(e)) => fail(&e.to_string(), 1),
        // The panic hook already printed the one line.
        Err(_) => ExitCode::from(101),
    }
}
