//! The plugin through the real cdylib: in-process host, panic containment, hostile files.

mod files_hostile;
mod inprocess;
mod panic;
