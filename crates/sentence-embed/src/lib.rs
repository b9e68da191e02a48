//! Sentence vectors on CPU, offline (see README.md).

pub mod encoder;
pub mod install;
pub mod model;
pub mod vector;

pub use encoder::{Encoder, EncoderError, EncoderOptions, MAX_PIECES};
pub use install::{
    download, install_from_path, verify, DownloadOptions, InstallError, Installed, Progress,
};
pub use model::{models_dir, ModelFile, ModelSpec, MINILM_L6_V2};
pub use vector::{Embedding, Hit, Int8Vector, VectorBytesError, VectorSet};
