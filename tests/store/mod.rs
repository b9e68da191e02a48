//! The store: the SQLite search index on real files, shared by processes, and its recall.

mod processes;
mod ranking;
mod recall;
mod search;
mod semantic;
