//! Wiring of `pi-ext-host serve`: load the plugin, connect stdin/stdout, run.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use abi_stable::library::lib_header_from_path;
use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{RResult, RStr};
use pi_ext_abi::protocol::{CommandCall, EventCall, ToolCall};
use pi_ext_abi::{HostBox, Host_TO, LogLevel, PluginBox, PluginModRef};
use serde_json::{json, Value};

use super::{Backend, HostTimeouts, Output, ServeHost, Server, ServerOptions};

/// Options of the `serve` subcommand (the plugin comes from the global `--plugin`).
#[derive(clap::Args, Debug, Clone)]
pub struct ServeArgs {
    /// Library to load instead of the one plugin.toml names.
    #[arg(long)]
    pub lib: Option<PathBuf>,
    /// Config file to hand the plugin instead of the one plugin.toml names.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Lowest plugin log level forwarded to the bridge (trace, debug, info, warn, error).
    #[arg(long, default_value = "info")]
    pub log_level: String,
    /// How long the plugin's background work may run after stdin closes.
    #[arg(long, default_value_t = 5000)]
    pub shutdown_timeout_ms: u64,
}

/// Serve `plugin` (its directory or its plugin.toml) until stdin closes.
pub fn run(plugin: &Path, args: &ServeArgs) -> Result<(), String> {
    let log_level = parse_level(&args.log_level)?;
    let loaded = load(plugin, args)?;
    let out = Arc::new(Output::new(Box::new(std::io::stdout())));
    let host = ServeHost::new(Arc::clone(&out), log_level, HostTimeouts::default());
    let plugin_info = json!({"plugin": loaded.id, "name": loaded.name, "version": loaded.version});
    let module = loaded.module;
    let plugin_dir = loaded.dir.to_string_lossy().into_owned();
    let config = loaded.config;
    let factory: super::BackendFactory = Box::new(move |host: ServeHost| {
        let host: HostBox = Host_TO::from_value(host, TD_Opaque);
        match (module.instantiate())(host, RStr::from_str(&plugin_dir), RStr::from_str(&config)) {
            RResult::ROk(plugin) => Ok(Arc::new(DirectBackend { plugin }) as Arc<dyn Backend>),
            RResult::RErr(e) => Err(format!("plugin refused to start: {e}")),
        }
    });
    let options = ServerOptions {
        plugin_info,
        shutdown_timeout: Duration::from_millis(args.shutdown_timeout_ms),
        on_shutdown: Box::new(|| std::process::exit(0)),
    };
    let server = Server::new(out, host, factory, options);
    server.serve(std::io::stdin().lock());
    Ok(())
}

fn parse_level(level: &str) -> Result<LogLevel, String> {
    Ok(match level {
        "trace" => LogLevel::Trace,
        "debug" => LogLevel::Debug,
        "info" => LogLevel::Info,
        "warn" => LogLevel::Warn,
        "error" => LogLevel::Error,
        other => return Err(format!("--log-level: unknown level '{other}' (trace, debug, info, warn, error)")),
    })
}

struct Loaded {
    module: PluginModRef,
    id: String,
    name: String,
    version: String,
    dir: PathBuf,
    config: String,
}

fn load(plugin: &Path, args: &ServeArgs) -> Result<Loaded, String> {
    let manifest_path = if plugin.is_dir() { plugin.join("plugin.toml") } else { plugin.to_path_buf() };
    let dir = manifest_path.parent().map(Path::to_path_buf).unwrap_or_default();
    let text =
        std::fs::read_to_string(&manifest_path).map_err(|e| format!("cannot read {}: {e}", manifest_path.display()))?;
    let manifest: toml::Table = text.parse().map_err(|e| format!("{}: {e}", manifest_path.display()))?;
    let section = manifest.get("plugin").and_then(|p| p.as_table()).ok_or("plugin.toml: missing [plugin]")?;
    let field = |name: &str| section.get(name).and_then(|v| v.as_str()).unwrap_or_default().to_string();
    let lib = match &args.lib {
        Some(lib) => lib.clone(),
        None => find_library(&dir, &field("library"))?,
    };
    let config_path =
        args.config.clone().or_else(|| Some(dir.join(field("config"))).filter(|_| !field("config").is_empty()));
    let config = match config_path {
        Some(path) => std::fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?,
        None => "null".into(),
    };
    let header = lib_header_from_path(&lib).map_err(|e| format!("{}: {e}", lib.display()))?;
    let module = header.init_root_module::<PluginModRef>().map_err(|e| format!("{}: {e}", lib.display()))?;
    let id = module.plugin_id()().into_string();
    Ok(Loaded { module, id, name: field("name"), version: field("version"), dir, config })
}

fn find_library(dir: &Path, stem: &str) -> Result<PathBuf, String> {
    let file = format!("{}{stem}{}", std::env::consts::DLL_PREFIX, std::env::consts::DLL_SUFFIX);
    let candidates = [dir.join(&file), dir.join("target/release").join(&file), dir.join("target/debug").join(&file)];
    candidates
        .iter()
        .find(|p| p.is_file())
        .cloned()
        .ok_or_else(|| format!("library {file} not found in {}", dir.display()))
}

/// Calls straight into the plugin object.
struct DirectBackend {
    plugin: PluginBox,
}

fn document(result: RResult<abi_stable::std_types::RString, abi_stable::std_types::RString>) -> Result<Value, String> {
    match result {
        RResult::ROk(text) => {
            serde_json::from_str(text.as_str()).map_err(|e| format!("plugin returned invalid JSON: {e}"))
        }
        RResult::RErr(e) => Err(e.into_string()),
    }
}

fn to_json<T: serde::Serialize>(value: &T) -> Result<String, String> {
    serde_json::to_string(value).map_err(|e| e.to_string())
}

impl Backend for DirectBackend {
    fn registrations(&self) -> Result<Value, String> {
        serde_json::from_str(self.plugin.registrations().as_str()).map_err(|e| format!("invalid registrations: {e}"))
    }
    fn event(&self, call: &EventCall) -> Result<Value, String> {
        document(self.plugin.on_event(RStr::from_str(&to_json(call)?)))
    }
    fn tool(&self, call: &ToolCall) -> Result<Value, String> {
        document(self.plugin.call_tool(RStr::from_str(&to_json(call)?)))
    }
    fn command(&self, call: &CommandCall) -> Result<Value, String> {
        document(self.plugin.run_command(RStr::from_str(&to_json(call)?)))
    }
    fn request(&self, method: &str, payload: &Value) -> Result<Value, String> {
        document(self.plugin.request(RStr::from_str(method), RStr::from_str(&payload.to_string())))
    }
    fn flush(&self, timeout: Duration) -> Value {
        serde_json::from_str(self.plugin.flush(timeout.as_millis() as u64).as_str()).unwrap_or(Value::Null)
    }
    fn shutdown(&self, timeout: Duration) -> Value {
        serde_json::from_str(self.plugin.shutdown(timeout.as_millis() as u64).as_str()).unwrap_or(Value::Null)
    }
}
