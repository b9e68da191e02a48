//! Summarize: writing meta files, through the host, across processes, with every provider and offline.

mod host;
mod names;
mod offline;
mod processes;
mod providers;
mod trigger;
