//! The store: the SQLite search index on real files, shared by processes, and its recall.

mod processes;
mod recall;
mod search;
mod semantic;
