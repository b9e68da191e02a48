//! `@@` references injected into prompts.

mod host;
mod inject;
