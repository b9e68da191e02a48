//! The meta store: `<agent dir>/sessions-meta/<id>.meta.json`, written atomically
//! under a lock file.
