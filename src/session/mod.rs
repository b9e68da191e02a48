//! Reading pi session files: header, entries, the tree and its active branch,
//! and context building exactly as pi's `SessionManager` does.
