//! A plugin built against another major version of pi-ext-abi is refused,
//! with both versions named. The plugin is real: the test copies
//! crates/pi-ext-abi with a bumped version, builds a minimal plugin against
//! it with cargo (offline, the workspace's Cargo.lock, a persistent target
//! dir under the workspace target so reruns are cheap) and loads it. A
//! control build of the same plugin against the current version loads, and
//! so does one built as pi-ext-abi 1.0: old plugins keep loading in a newer
//! host of the same major (1.1 added JSON documents only; a longer `Host`
//! vtable in the host would fail abi_stable's layout check for them).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use pi_ext_host::HostError;

/// Both builds share one target dir; cargo's lock would serialise them anyway.
static BUILD: Mutex<()> = Mutex::new(());

fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/abi-v2-plugin")
}

/// Write only when the content differs, so cargo's mtime fingerprints stay valid across runs.
fn write_if_changed(path: &Path, content: &[u8]) {
    if std::fs::read(path).ok().as_deref() == Some(content) {
        return;
    }
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

fn copy_tree(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            write_if_changed(&target, &std::fs::read(entry.path()).unwrap());
        }
    }
}

/// The workspace's `[workspace.package]` and registry `[workspace.dependencies]`,
/// so the copied pi-ext-abi resolves its `*.workspace = true` keys as it does at home.
fn workspace_manifest() -> String {
    let root: toml::Table = std::fs::read_to_string(common::workspace_root().join("Cargo.toml"))
        .unwrap()
        .parse()
        .unwrap();
    let workspace = root["workspace"].as_table().unwrap();
    let mut deps = workspace["dependencies"].as_table().unwrap().clone();
    deps.retain(|_, spec| spec.get("path").is_none());
    let mut out = toml::Table::new();
    let mut ws = toml::Table::new();
    ws.insert(
        "members".into(),
        toml::Value::Array(vec!["pi-ext-abi".into(), "plugin".into()]),
    );
    ws.insert("resolver".into(), "2".into());
    ws.insert("package".into(), workspace["package"].clone());
    ws.insert("dependencies".into(), toml::Value::Table(deps));
    out.insert("workspace".into(), toml::Value::Table(ws));
    toml::to_string(&out).unwrap()
}

/// Build the fixture plugin against a copy of pi-ext-abi with `abi_version`;
/// returns (plugin dir, library path).
fn build_fixture(name: &str, abi_version: &str) -> (PathBuf, PathBuf) {
    let _guard = BUILD.lock().unwrap_or_else(|e| e.into_inner());
    let base = common::target_dir().join("abi-v2");
    let ws = base.join(name);
    let abi_src = common::workspace_root().join("crates/pi-ext-abi");

    copy_tree(&abi_src.join("src"), &ws.join("pi-ext-abi/src"));
    let abi_toml: toml::Table = std::fs::read_to_string(abi_src.join("Cargo.toml"))
        .unwrap()
        .parse()
        .unwrap();
    let mut abi_toml = abi_toml;
    abi_toml["package"]
        .as_table_mut()
        .unwrap()
        .insert("version".into(), abi_version.into());
    write_if_changed(
        &ws.join("pi-ext-abi/Cargo.toml"),
        toml::to_string(&abi_toml).unwrap().as_bytes(),
    );

    let lib_stem = name.replace('-', "_");
    let fill = |text: String| {
        text.replace("{{NAME}}", name)
            .replace("{{LIB}}", &lib_stem)
            .replace("{{DECLARED_ABI}}", &format!("{}.0", pi_ext_abi::ABI_MAJOR))
    };
    let template = |file: &str| std::fs::read_to_string(fixture_dir().join(file)).unwrap();
    copy_tree(&fixture_dir().join("src"), &ws.join("plugin/src"));
    write_if_changed(
        &ws.join("plugin/Cargo.toml"),
        fill(template("Cargo.toml.tmpl")).as_bytes(),
    );
    write_if_changed(
        &ws.join("plugin/plugin.toml"),
        fill(template("plugin.toml.tmpl")).as_bytes(),
    );
    write_if_changed(&ws.join("Cargo.toml"), workspace_manifest().as_bytes());
    if !ws.join("Cargo.lock").exists() {
        std::fs::copy(
            common::workspace_root().join("Cargo.lock"),
            ws.join("Cargo.lock"),
        )
        .unwrap();
    }

    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let target = base.join("target");
    let output = Command::new(cargo)
        .args([
            "build",
            "--offline",
            "--quiet",
            "-p",
            name,
            "--manifest-path",
        ])
        .arg(ws.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(&target)
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("CARGO_BUILD_TARGET_DIR")
        // CI compiles the workspace's crates with clippy's lints (.ci/run): a
        // plugin author's build does not.
        .env_remove("RUSTC_WORKSPACE_WRAPPER")
        .env_remove("CLIPPY_ARGS")
        .output()
        .expect("run cargo");
    assert!(
        output.status.success(),
        "building the fixture plugin failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let lib = target
        .join("debug")
        .join(pi_ext_host::loader::library_file_name(&lib_stem));
    assert!(lib.is_file(), "{} not built", lib.display());
    (ws.join("plugin"), lib)
}

fn other_major() -> String {
    format!("{}.0.0", pi_ext_abi::ABI_MAJOR + 1)
}

#[test]
fn a_library_built_against_another_abi_major_is_refused_naming_both_versions() {
    let (plugin_dir, lib) = build_fixture("abi-fixture-next", &other_major());

    let Err(err) = pi_ext_host::loader::load_module_from_path(&lib) else {
        panic!("the v2 library was loaded")
    };
    match &err {
        HostError::AbiMismatch { host, plugin, .. } => {
            assert_eq!(host, pi_ext_abi::ABI_VERSION);
            assert_eq!(plugin, &other_major());
        }
        other => panic!("expected an ABI mismatch, got: {other}"),
    }

    // Through the binary, with the manifest found by directory.
    let run = common::run(&[
        "--plugin",
        &plugin_dir.display().to_string(),
        "--lib",
        &lib.display().to_string(),
        "info",
    ]);
    let line = run.failure();
    assert!(line.contains("ABI version mismatch"), "{line}");
    assert!(
        line.contains(&format!("pi-ext-abi {}", pi_ext_abi::ABI_VERSION)),
        "{line}"
    );
    assert!(
        line.contains(&format!("pi-ext-abi {}", other_major())),
        "{line}"
    );
}

#[test]
fn the_same_plugin_built_against_this_abi_loads() {
    let (plugin_dir, lib) = build_fixture("abi-fixture-same", pi_ext_abi::ABI_VERSION);
    let module = pi_ext_host::loader::load_module_from_path(&lib).unwrap_or_else(|e| panic!("{e}"));
    let host = pi_ext_host::RecordingHost::with_stderr_level(Default::default(), None);
    let Err(err) =
        pi_ext_host::PluginInstance::new(module, host.to_host_box(), &plugin_dir, "null")
    else {
        panic!("the fixture refuses to instantiate")
    };
    assert_eq!(
        err.to_string(),
        "abi-fixture-same@0.1.0: instantiate failed: abi-fixture-same is a test fixture and cannot be instantiated"
    );
}

#[test]
fn a_plugin_built_against_abi_1_0_loads_and_calls_the_1_1_host() {
    let (plugin_dir, lib) = build_fixture("abi-fixture-old", "1.0.0");
    let module = pi_ext_host::loader::load_module_from_path(&lib).unwrap_or_else(|e| panic!("{e}"));
    let host = pi_ext_host::RecordingHost::with_stderr_level(Default::default(), None);
    let Err(err) =
        pi_ext_host::PluginInstance::new(module, host.to_host_box(), &plugin_dir, "null")
    else {
        panic!("the fixture refuses to instantiate")
    };
    assert!(
        err.to_string()
            .contains("abi-fixture-old is a test fixture"),
        "{err}"
    );
    let effects = host.effects();
    assert_eq!(effects[0]["type"], "notify", "{effects:?}");
    assert_eq!(effects[0]["text"], "abi-fixture-old loaded");
}
