//! The `pi-ext-host` command line: argument definitions and the flow shared
//! by every subcommand (manifest → session → config → library → instance →
//! call → flush/shutdown → one JSON document with the effects).

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use pi_ext_abi::protocol::{
    BeforeAgentStartResult, CommandCall, EventCall, InputResult, SessionContext, ToolCall,
    PROTOCOL_VERSION,
};
use serde_json::{json, Value};

use crate::context::{bare_context, resolve_agent_dir, session_context};
use crate::error::HostError;
use crate::instance::PluginInstance;
use crate::manifest::Manifest;
use crate::recording::RecordingHost;

/// How long `--wait` waits for the plugin's background work.
pub const WAIT_TIMEOUT: Duration = Duration::from_secs(120);
/// Shutdown deadline after a call without `--wait`.
pub const SHORT_SHUTDOWN: Duration = Duration::from_secs(2);
/// The system prompt `prompt` hands to `before_agent_start` unless `--system-prompt` is given.
pub const DEFAULT_SYSTEM_PROMPT: &str =
    "You are pi, a coding agent. (pi-ext-host stand-in system prompt)";

#[derive(Parser, Debug)]
#[command(
    name = "pi-ext-host",
    version,
    about = "Load a pi-ext-abi plugin, call it like pi would, and print the result and its effects as JSON"
)]
pub struct Cli {
    /// The plugin's directory or its plugin.toml.
    #[arg(long, global = true, default_value = ".", value_name = "DIR_OR_TOML")]
    pub plugin: PathBuf,
    /// pi's agent directory (default: $PI_CODING_AGENT_DIR, else ~/.pi/agent).
    #[arg(long, global = true, value_name = "DIR")]
    pub agent_dir: Option<PathBuf>,
    /// Load this library file instead of searching (also: $PI_EXT_LIB).
    #[arg(long, global = true, value_name = "PATH")]
    pub lib: Option<PathBuf>,
    /// Use this config file instead of the manifest's.
    #[arg(long, global = true, value_name = "PATH")]
    pub config: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Args, Debug, Clone)]
pub struct SessionArgs {
    /// A pi session file (JSONL); read, never written.
    #[arg(long, value_name = "FILE")]
    pub session: PathBuf,
    /// The current leaf entry id (default: the last entry, as pi does).
    #[arg(long, value_name = "ID")]
    pub leaf: Option<String>,
    /// Working directory to report (default: the session header's cwd).
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// The manifest plus the events, commands and tools the plugin registers.
    Info,
    /// Fire one event.
    Event {
        /// Event name, e.g. agent_end.
        name: String,
        #[command(flatten)]
        session: SessionArgs,
        /// The event object as JSON (default: a minimal pi-shaped payload).
        #[arg(long, value_name = "JSON")]
        payload: Option<String>,
        /// Wait (up to 120 s) for the plugin's background work before printing.
        #[arg(long)]
        wait: bool,
    },
    /// Run `input` then `before_agent_start` as pi does for a typed prompt.
    Prompt {
        #[command(flatten)]
        session: SessionArgs,
        /// The prompt text.
        text: String,
        /// The system prompt handed to before_agent_start.
        #[arg(long, value_name = "TEXT")]
        system_prompt: Option<String>,
        #[arg(long)]
        wait: bool,
    },
    /// Execute a registered tool.
    Tool {
        name: String,
        #[command(flatten)]
        session: SessionArgs,
        /// The tool's arguments: a JSON object.
        #[arg(value_name = "JSON_ARGS")]
        args: String,
        #[arg(long)]
        wait: bool,
    },
    /// Run a registered command (`/name args`).
    Command {
        name: String,
        /// The command's argument text.
        #[arg(value_name = "ARGS")]
        args: Vec<String>,
        #[command(flatten)]
        session: SessionArgs,
        #[arg(long)]
        wait: bool,
    },
    /// Serve the plugin over a JSON-lines protocol on stdin/stdout (see SERVE.md); used by the pi bridge.
    Serve(crate::serve::ServeArgs),
}

/// Everything a subcommand needs after start-up.
pub struct Loaded {
    pub manifest: Manifest,
    pub library: PathBuf,
    pub host: RecordingHost,
    pub instance: PluginInstance,
}

/// Load the manifest, config and library and instantiate the plugin with a
/// recording host over `context`.
pub fn load(cli: &Cli, context: SessionContext) -> Result<Loaded, HostError> {
    let manifest = Manifest::load(&cli.plugin)?;
    let config = manifest.config_json(cli.config.as_deref());
    let library = crate::loader::find_library(&manifest, cli.lib.as_deref())?;
    let module = crate::loader::load_module_from_path(&library)?;
    let host = RecordingHost::new(context);
    let instance = PluginInstance::new(module, host.to_host_box(), &manifest.dir, &config)?;
    manifest.warn_config_problems(cli.config.as_deref(), &instance.registrations());
    Ok(Loaded {
        manifest,
        library,
        host,
        instance,
    })
}

/// Run one subcommand and return the JSON document to print.
pub fn run(cli: &Cli) -> Result<Value, HostError> {
    match &cli.command {
        Command::Info => with_plugin(cli, None, false, |loaded, _| {
            let registrations = loaded.instance.registrations();
            let warnings = loaded.manifest.registration_mismatches(&registrations);
            Ok(json!({
                "manifest": loaded.manifest,
                "pluginId": loaded.instance.plugin_id(),
                "library": loaded.library,
                "abi": {"host": pi_ext_abi::ABI_VERSION, "declared": loaded.manifest.abi},
                "registrations": registrations,
                "warnings": warnings,
            }))
        }),
        Command::Event {
            name,
            session,
            payload,
            wait,
        } => {
            let payload = match payload.as_deref().map(serde_json::from_str::<Value>) {
                Some(Ok(object)) if object.is_object() => object,
                Some(Ok(_)) => {
                    return Err(HostError::Usage("--payload: must be a JSON object".into()))
                }
                Some(Err(e)) => {
                    return Err(HostError::Usage(format!("--payload: invalid JSON: {e}")))
                }
                None => default_payload(name),
            };
            with_plugin(cli, Some(session), *wait, |loaded, ctx| {
                Ok(json!({"event": name, "result": fire(loaded, ctx, name, payload)?}))
            })
        }
        Command::Prompt {
            session,
            text,
            system_prompt,
            wait,
        } => {
            let system_prompt = system_prompt
                .clone()
                .unwrap_or_else(|| DEFAULT_SYSTEM_PROMPT.to_string());
            with_plugin(cli, Some(session), *wait, |loaded, ctx| {
                prompt(loaded, ctx, text, &system_prompt)
            })
        }
        Command::Tool {
            name,
            session,
            args,
            wait,
        } => {
            let params: Value = serde_json::from_str(args).map_err(|e| {
                HostError::Usage(format!("tool {name}: invalid JSON arguments: {e}"))
            })?;
            with_plugin(cli, Some(session), *wait, |loaded, ctx| {
                let call = ToolCall {
                    v: PROTOCOL_VERSION,
                    tool: name.clone(),
                    tool_call_id: "pi-ext-host-1".into(),
                    params,
                    ctx: ctx.clone(),
                };
                let result = loaded.instance.tool(&call).map_err(HostError::Plugin)?;
                Ok(json!({"tool": name, "result": result}))
            })
        }
        Command::Command {
            name,
            args,
            session,
            wait,
        } => {
            let args = args.join(" ");
            with_plugin(cli, Some(session), *wait, |loaded, ctx| {
                let call = CommandCall {
                    v: PROTOCOL_VERSION,
                    command: name.clone(),
                    args: args.clone(),
                    ctx: ctx.clone(),
                };
                let result = loaded.instance.command(&call).map_err(HostError::Plugin)?;
                Ok(json!({"command": name, "args": args, "result": result}))
            })
        }
        // serve writes its own protocol to stdout instead of one document: see `crate::serve::run`.
        Command::Serve(_) => Err(HostError::Usage(
            "serve runs through pi_ext_host::serve::run".into(),
        )),
    }
}

/// Common flow of the subcommands: the session (if any) must exist before
/// anything is loaded; after the call the plugin is flushed (with `wait`)
/// and shut down, and the flush report and the effects are attached.
fn with_plugin(
    cli: &Cli,
    session: Option<&SessionArgs>,
    wait: bool,
    call: impl FnOnce(&Loaded, &SessionContext) -> Result<Value, HostError>,
) -> Result<Value, HostError> {
    let agent_dir = resolve_agent_dir(cli.agent_dir.as_deref());
    let ctx = match session {
        Some(s) => session_context(&s.session, s.leaf.as_deref(), &agent_dir, s.cwd.as_deref())?,
        None => bare_context(&agent_dir),
    };
    let loaded = load(cli, ctx.clone())?;
    let outcome = call(&loaded, &ctx);
    if wait {
        loaded.instance.flush(WAIT_TIMEOUT);
    }
    let flush = loaded.instance.shutdown(SHORT_SHUTDOWN);
    let mut doc = outcome?;
    if let Some(object) = doc.as_object_mut() {
        object.insert("flush".into(), json!(flush));
        object.insert("effects".into(), Value::Array(loaded.host.take_effects()));
    }
    Ok(doc)
}

/// pi's order for a typed prompt: `input` (may transform or handle it),
/// then `before_agent_start` with the prompt and the system prompt.
fn prompt(
    loaded: &Loaded,
    ctx: &SessionContext,
    text: &str,
    system_prompt: &str,
) -> Result<Value, HostError> {
    let handles = |event: &str| {
        loaded
            .instance
            .registrations()
            .events
            .iter()
            .any(|e| e == event)
    };
    let mut prompt = text.to_string();
    let mut input_result = Value::Null;
    if handles("input") {
        let payload = json!({"type": "input", "text": text, "source": "interactive"});
        input_result = fire(loaded, ctx, "input", payload)?;
        match event_result(&input_result, "input")?.unwrap_or(InputResult::Continue) {
            InputResult::Continue => {}
            InputResult::Transform { text } => prompt = text,
            InputResult::Handled => {
                return Ok(json!({
                    "prompt": prompt, "input": input_result, "handled": true,
                    "message": null, "systemPrompt": system_prompt,
                }))
            }
        }
    }
    let mut raw = Value::Null;
    if handles("before_agent_start") {
        let payload =
            json!({"type": "before_agent_start", "prompt": prompt, "systemPrompt": system_prompt});
        raw = fire(loaded, ctx, "before_agent_start", payload)?;
    }
    let result: BeforeAgentStartResult =
        event_result(&raw, "before_agent_start")?.unwrap_or_default();
    Ok(json!({
        "prompt": prompt,
        "input": input_result,
        "handled": false,
        "beforeAgentStart": raw,
        "message": result.message,
        "systemPrompt": result.system_prompt.as_deref().unwrap_or(system_prompt),
    }))
}

/// Deliver one event to the plugin; its result document.
fn fire(
    loaded: &Loaded,
    ctx: &SessionContext,
    event: &str,
    payload: Value,
) -> Result<Value, HostError> {
    let call = EventCall {
        v: PROTOCOL_VERSION,
        event: event.into(),
        payload,
        ctx: ctx.clone(),
    };
    loaded.instance.event(&call).map_err(HostError::Plugin)
}

/// An event's result document, typed (`None` for `null`: the event has no result).
fn event_result<T: serde::de::DeserializeOwned>(
    raw: &Value,
    event: &str,
) -> Result<Option<T>, HostError> {
    let invalid = |e| HostError::Plugin(format!("event {event}: invalid result: {e}"));
    (!raw.is_null())
        .then(|| serde_json::from_value(raw.clone()).map_err(invalid))
        .transpose()
}

/// A minimal pi-shaped event object for events fired without `--payload`.
pub fn default_payload(event: &str) -> Value {
    match event {
        "session_start" => json!({"type": event, "reason": "startup"}),
        "input" => json!({"type": event, "text": "", "source": "interactive"}),
        "before_agent_start" => {
            json!({"type": event, "prompt": "", "systemPrompt": DEFAULT_SYSTEM_PROMPT})
        }
        "agent_end" => json!({"type": event, "messages": []}),
        _ => json!({"type": event}),
    }
}

/// Render a clap error as one line (clap's own rendering spans several).
pub fn one_line_usage_error(rendered: &str) -> String {
    let body = rendered.split("\nUsage:").next().unwrap_or(rendered);
    let body = body
        .split("\n\nFor more information")
        .next()
        .unwrap_or(body);
    let line = crate::error::one_line(body);
    let line = line.strip_prefix("error: ").unwrap_or(&line).to_string();
    format!("{line} (see --help)")
}
