//! What the plugin does for the user, each built on the reader, the store,
//! the resolver and the model layer:
//!
//! - [`summarize`]: turns a session into its meta file (a model, or the
//!   offline extractive one), on `agent_end`, `/index-session`, `/index-all`
//!   and the CLI's `index`;
//! - [`references`]: `@@` references in a prompt, injected as quoted context;
//! - [`query`]: the `query_session` tool, a budgeted, cited answer;
//! - [`search_tool`]: the `search_sessions` tool and `/sessions`' rows;
//! - [`semantic`]: whether search ranks by meaning too (`search.semantic`
//!   and the installed sentence model), and how to turn it on;
//! - [`commands`]: the plugin's commands in pi.

pub mod commands;
pub mod embedding;
pub mod query;
pub mod references;
pub mod search_tool;
pub mod semantic;
pub mod summarize;
