//! In-memory catalog of sessions and meta files, refreshed incrementally by
//! modification time; resolves `id | id prefix | name` references.

/// Placeholder until the catalog lands.
#[derive(Default)]
pub struct Catalog {}

impl Catalog {
    pub fn new() -> Self {
        Catalog {}
    }
}
