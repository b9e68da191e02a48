//! The `query_session` tool.

mod host;
mod recall;
mod tool;
