//! Shared helpers for the host-level tests of the root package: find the
//! real cdylib cargo built for this test run and load it through
//! pi-ext-host, exactly as a host would.

use std::path::{Path, PathBuf};

use pi_ext_abi::protocol::{EventCall, SessionContext, ToolCall, ToolResult, PROTOCOL_VERSION};
use pi_ext_host::{Manifest, PluginInstance, RecordingHost};
use serde_json::Value;

pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The cdylib cargo builds next to the integration tests
/// (`target/<profile>/deps/libsession_index.so`), never the rlib.
pub fn plugin_library() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let deps = exe.parent().expect("test executable has a directory");
    let file = pi_ext_host::loader::library_file_name("session_index");
    for dir in [deps, deps.parent().unwrap_or(deps)] {
        let candidate = dir.join(&file);
        if candidate.is_file() {
            return candidate;
        }
    }
    panic!(
        "{file} not found next to {} (cargo builds the cdylib there for integration tests)",
        exe.display()
    );
}

/// The `pi-ext-host` binary: the one cargo built for the workspace (`cargo test
/// --workspace` builds it for pi-ext-host's own tests), else built here into a
/// target dir of its own (the outer cargo may still hold the main one's lock).
pub fn host_binary() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().and_then(|deps| deps.parent()).unwrap();
    let name = format!("pi-ext-host{}", std::env::consts::EXE_SUFFIX);
    let built = profile_dir.join(&name);
    if built.is_file() {
        return built;
    }
    let target_dir = profile_dir.parent().unwrap().join("indexing-e2e-host");
    let status = std::process::Command::new(env!("CARGO"))
        .args([
            "build",
            "--quiet",
            "-p",
            "pi-ext-host",
            "--bin",
            "pi-ext-host",
            "--target-dir",
        ])
        .arg(&target_dir)
        .current_dir(repo_root())
        .status()
        .unwrap();
    assert!(status.success(), "building pi-ext-host failed");
    target_dir.join("debug").join(name)
}

/// `pi-ext-host` with this plugin (its manifest and the cdylib), on
/// `agent_dir` with the config file `config`: the caller adds the subcommand.
pub fn host_command(agent_dir: &Path, config: &Path) -> std::process::Command {
    let mut command = std::process::Command::new(host_binary());
    command
        .arg("--plugin")
        .arg(repo_root())
        .arg("--lib")
        .arg(plugin_library())
        .arg("--agent-dir")
        .arg(agent_dir)
        .arg("--config")
        .arg(config);
    command
}

pub use super::shared_dir::pi_sessions_dir as fixtures_dir;

/// A real pi session file.
pub fn real_session() -> PathBuf {
    super::shared_dir::first_real_session()
}

pub struct Loaded {
    pub host: RecordingHost,
    pub instance: PluginInstance,
    pub ctx: SessionContext,
    _agent_dir: tempfile::TempDir,
}

/// The real plugin library, loaded through the repository's manifest as a
/// host loads it, instantiated over `ctx` with `config_json`, and the
/// recording host it talks to.
pub fn instance(ctx: &SessionContext, config_json: &str) -> (PluginInstance, RecordingHost) {
    let manifest = Manifest::load(repo_root()).expect("repo plugin.toml loads");
    let module = pi_ext_host::loader::load_module(&manifest, Some(&plugin_library()))
        .expect("plugin library loads");
    let host = RecordingHost::with_stderr_level(ctx.clone(), None);
    let instance = PluginInstance::new(module, host.to_host_box(), &manifest.dir, config_json)
        .expect("plugin instantiates");
    (instance, host)
}

/// Deliver the event `name` to `instance`; its result document.
pub fn event_on(
    instance: &PluginInstance,
    ctx: &SessionContext,
    name: &str,
    payload: Value,
) -> Value {
    let call = EventCall {
        v: PROTOCOL_VERSION,
        event: name.into(),
        payload,
        ctx: ctx.clone(),
    };
    instance.event(&call).expect("event")
}

/// Call the tool `tool` of `instance` (the call itself never fails; its
/// result may be an error).
pub fn tool_on(
    instance: &PluginInstance,
    ctx: &SessionContext,
    tool: &str,
    params: Value,
) -> ToolResult {
    let call = ToolCall {
        v: PROTOCOL_VERSION,
        tool: tool.into(),
        tool_call_id: "c1".into(),
        params,
        ctx: ctx.clone(),
    };
    instance
        .tool(&call)
        .expect("the tool call itself never fails")
}

/// Load the real plugin library through the manifest with `config_json`
/// (None: the manifest's default config) over `session`, with an empty agent dir.
pub fn load_plugin(session: &Path, config_json: Option<&str>) -> Loaded {
    let manifest = Manifest::load(repo_root()).expect("repo plugin.toml loads");
    let module = pi_ext_host::loader::load_module(&manifest, Some(&plugin_library()))
        .expect("plugin library loads");
    let agent_dir = tempfile::tempdir().expect("temp agent dir");
    // The host reads a session file only inside `<agent dir>/sessions`: a copy goes there.
    let project = agent_dir.path().join("sessions").join("--fixtures--");
    std::fs::create_dir_all(&project).expect("sessions dir");
    let copy = project.join(session.file_name().expect("a file name"));
    std::fs::copy(session, &copy).expect("copy the session");
    let ctx =
        pi_ext_host::session_context(&copy, None, agent_dir.path(), None).expect("session context");
    let host = RecordingHost::with_stderr_level(ctx.clone(), None);
    let config = match config_json {
        Some(text) => text.to_string(),
        None => manifest.config_json(None),
    };
    let instance = PluginInstance::new(module, host.to_host_box(), &manifest.dir, &config)
        .expect("plugin instantiates");
    Loaded {
        host,
        instance,
        ctx,
        _agent_dir: agent_dir,
    }
}

pub fn event(loaded: &Loaded, name: &str, payload: Value) -> Result<Value, String> {
    let call = EventCall {
        v: PROTOCOL_VERSION,
        event: name.into(),
        payload,
        ctx: loaded.ctx.clone(),
    };
    loaded.instance.event(&call)
}
