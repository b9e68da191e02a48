//! Wiring of `pi-ext-host serve`: load the plugin with the host library,
//! connect stdin/stdout, run until EOF or `shutdown`.

use std::sync::Arc;
use std::time::Duration;

use abi_stable::sabi_trait::TD_Opaque;
use pi_ext_abi::protocol::{CommandCall, EventCall, ToolCall};
use pi_ext_abi::{HostBox, Host_TO, LogLevel};
use serde_json::{json, Value};

use super::{Backend, BackendFactory, HostTimeouts, Output, ServeHost, Server, ServerOptions};
use crate::cli::Cli;
use crate::error::HostError;
use crate::instance::PluginInstance;
use crate::manifest::Manifest;

/// Options of the `serve` subcommand; `--plugin`, `--lib` and `--config` are the global ones.
#[derive(clap::Args, Debug, Clone)]
pub struct ServeArgs {
    /// Lowest plugin log level forwarded to the bridge (trace, debug, info, warn, error).
    #[arg(long, default_value = "info", value_name = "LEVEL")]
    pub log_level: String,
    /// How long the plugin's background work may run after stdin closes.
    #[arg(long, default_value_t = 5000, value_name = "MS")]
    pub shutdown_timeout_ms: u64,
}

/// Serve the plugin until stdin closes. Errors are start-up failures (nothing
/// has been written to stdout then); the caller prints them as one line.
pub fn run(cli: &Cli, args: &ServeArgs) -> Result<(), HostError> {
    let log_level = LogLevel::from_name(&args.log_level).ok_or_else(|| {
        HostError::Usage(format!(
            "--log-level: unknown level '{}' (trace, debug, info, warn, error)",
            args.log_level
        ))
    })?;
    let manifest = Manifest::load(&cli.plugin)?;
    let config = manifest.config_json(cli.config.as_deref());
    let library = crate::loader::find_library(&manifest, cli.lib.as_deref())?;
    let module = crate::loader::load_module_from_path(&library)?;

    let out = Arc::new(Output::new(protocol_stdout()));
    let host = ServeHost::new(Arc::clone(&out), log_level, HostTimeouts::default());
    let plugin_info = json!({
        "plugin": format!("{}@{}", manifest.name, manifest.version),
        "name": manifest.name,
        "version": manifest.version,
        "library": library.display().to_string(),
    });
    let config_override = cli.config.clone();
    let factory: BackendFactory = Box::new(move |host: ServeHost| {
        let host: HostBox = Host_TO::from_value(host, TD_Opaque);
        let instance =
            PluginInstance::new(module, host, &manifest.dir, &config).map_err(|e| e.to_string())?;
        manifest.warn_config_problems(config_override.as_deref(), &instance.registrations());
        Ok(Arc::new(instance) as Arc<dyn Backend>)
    });
    let options = ServerOptions {
        plugin_info,
        shutdown_timeout: Duration::from_millis(args.shutdown_timeout_ms),
        on_shutdown: Box::new(|| std::process::exit(0)),
    };
    Server::new(out, host, factory, options).serve(std::io::stdin().lock());
    Ok(())
}

/// The protocol's stdout. On unix the original fd 1 is kept privately and fd 1
/// is pointed at stderr, so a stray print from the plugin (or a library it
/// uses) lands in the log instead of corrupting the protocol.
fn protocol_stdout() -> Box<dyn std::io::Write + Send> {
    #[cfg(unix)]
    {
        use std::os::fd::FromRawFd;
        // SAFETY: dup/dup2/close on this process's own standard descriptors
        // before any other thread writes to them; the duplicate is owned by the File.
        unsafe {
            let fd = libc::dup(1);
            if fd >= 0 {
                if libc::dup2(2, 1) >= 0 {
                    return Box::new(std::fs::File::from_raw_fd(fd));
                }
                libc::close(fd);
            }
        }
    }
    Box::new(std::io::stdout())
}

fn to_value<T: serde::Serialize>(value: &T) -> Result<Value, String> {
    serde_json::to_value(value).map_err(|e| e.to_string())
}

impl Backend for PluginInstance {
    fn registrations(&self) -> Result<Value, String> {
        to_value(&PluginInstance::registrations(self))
    }
    fn event(&self, call: &EventCall) -> Result<Value, String> {
        PluginInstance::event(self, call)
    }
    fn tool(&self, call: &ToolCall) -> Result<Value, String> {
        to_value(&PluginInstance::tool(self, call)?)
    }
    fn command(&self, call: &CommandCall) -> Result<Value, String> {
        to_value(&PluginInstance::command(self, call)?)
    }
    fn request(&self, method: &str, payload: &Value) -> Result<Value, String> {
        PluginInstance::request(self, method, payload)
    }
    fn flush(&self, timeout: Duration) -> Value {
        to_value(&PluginInstance::flush(self, timeout)).unwrap_or(Value::Null)
    }
    fn shutdown(&self, timeout: Duration) -> Value {
        to_value(&PluginInstance::shutdown(self, timeout)).unwrap_or(Value::Null)
    }
}
