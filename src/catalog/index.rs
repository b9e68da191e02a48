//! The searchable side of the catalog: one item per session (or per meta
//! file whose session is missing), with precomputed lookup keys, kept up to
//! date incrementally as files change.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::OnceLock;

use nucleo_matcher::Utf32String;

use super::table::Table;
use super::CatalogEntry;

/// What an item stands for.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum ItemKey {
    /// A session file, by its path under the sessions directory.
    Session(PathBuf),
    /// A meta file whose session file is not in the sessions directory.
    Orphan(String),
}

/// A fuzzy-matchable field.
pub(crate) struct Field {
    pub text: Utf32String,
    /// Long fields are scored greedily (linear time) rather than optimally.
    pub long: bool,
    /// Field weight applied to the normalized score (names count most).
    pub weight: f64,
    /// Bit set of the ASCII letters and digits in the field, to skip fields
    /// that cannot match before running the matcher.
    pub mask: u64,
}

pub(crate) struct Item {
    pub key: ItemKey,
    pub entry: CatalogEntry,
    pub id_lower: String,
    /// Lower-cased names (pi's `session_info` name and the meta name).
    pub names: Vec<String>,
    pub slugs: Vec<String>,
    /// Built on the first fuzzy lookup: exact lookups (and the first scan) never need them.
    fields: OnceLock<Vec<Field>>,
}

impl Item {
    pub fn fields(&self) -> &[Field] {
        self.fields.get_or_init(|| {
            let entry = &self.entry;
            let mut fields = Vec::new();
            for n in &self.names {
                fields.push(field(n, 1.0));
            }
            if !entry.tags.is_empty() {
                fields.push(field(&entry.tags.join(" "), 0.95));
            }
            if let Some(d) = entry.description.as_deref().filter(|d| !d.is_empty()) {
                fields.push(field(&d.chars().take(160).collect::<String>(), 0.85));
            }
            // Sessions never indexed and never named are still found by what they started with.
            if let Some(m) = entry.first_message.as_deref() {
                let weight = if self.names.is_empty() { 0.9 } else { 0.75 };
                fields.push(field(&m.chars().take(120).collect::<String>(), weight));
            }
            fields
        })
    }

    pub fn missing(&self) -> bool {
        matches!(self.key, ItemKey::Orphan(_))
    }

    pub fn new(key: ItemKey, entry: CatalogEntry, meta_name: Option<&str>) -> Item {
        let mut names: Vec<String> = Vec::new();
        for n in entry.name.iter().map(String::as_str).chain(meta_name) {
            let lower = name_key(n);
            if !lower.is_empty() && !names.contains(&lower) {
                names.push(lower);
            }
        }
        let mut slugs = Vec::new();
        for n in &names {
            for s in [slug(n), loose_slug(n)] {
                if !s.is_empty() && !slugs.contains(&s) && !names.contains(&s) {
                    slugs.push(s);
                }
            }
        }
        Item { id_lower: entry.id.to_lowercase(), key, entry, names, slugs, fields: OnceLock::new() }
    }
}

fn field(text: &str, weight: f64) -> Field {
    Field { mask: char_mask(text), long: text.len() > LONG_FIELD, text: Utf32String::from(text), weight }
}

/// How a name is looked up: whitespace runs as one space, lower-cased.
pub(crate) fn name_key(name: &str) -> String {
    name.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase()
}

/// Fields longer than this (bytes) are matched greedily.
const LONG_FIELD: usize = 64;

/// Bit set of ASCII alphanumerics (case-folded); other characters are not
/// tracked, so the prefilter never rejects a possible match.
pub(crate) fn char_mask(text: &str) -> u64 {
    let mut mask = 0u64;
    for b in text.bytes() {
        let b = b.to_ascii_lowercase();
        if b.is_ascii_lowercase() {
            mask |= 1 << (b - b'a');
        } else if b.is_ascii_digit() {
            mask |= 1 << (26 + b - b'0');
        }
    }
    mask
}

/// The reference form of a name: lower-cased, whitespace runs as one hyphen.
pub fn slug(name: &str) -> String {
    name.trim().to_lowercase().split_whitespace().collect::<Vec<_>>().join("-")
}

/// A forgiving slug: every run of non-alphanumeric characters (any script)
/// becomes one hyphen, so `Fix: login (v2)` is also `fix-login-v2`.
pub fn loose_slug(name: &str) -> String {
    let lower = name.to_lowercase();
    let parts: Vec<&str> = lower.split(|c: char| !c.is_alphanumeric()).filter(|p| !p.is_empty()).collect();
    parts.join("-")
}

#[derive(Default)]
pub(crate) struct Index {
    items: Vec<Option<Item>>,
    free: Vec<usize>,
    by_key: HashMap<ItemKey, usize>,
    pub by_id: HashMap<String, Vec<usize>>,
    /// Lower-cased ids, for prefix ranges.
    pub ids: BTreeMap<String, Vec<usize>>,
    pub by_name: HashMap<String, Vec<usize>>,
    pub by_slug: HashMap<String, Vec<usize>>,
    /// Bumped on every change; lets callers cache derived views.
    pub generation: u64,
    /// The fuzzy fields in flat form, from the first fuzzy lookup on.
    table: OnceLock<Table>,
}

fn push(map: &mut HashMap<String, Vec<usize>>, key: &str, slot: usize) {
    let v = map.entry(key.to_string()).or_default();
    if !v.contains(&slot) {
        v.push(slot);
    }
}

fn pull(map: &mut HashMap<String, Vec<usize>>, key: &str, slot: usize) {
    if let Some(v) = map.get_mut(key) {
        v.retain(|&s| s != slot);
        if v.is_empty() {
            map.remove(key);
        }
    }
}

impl Index {
    pub fn get(&self, slot: usize) -> Option<&Item> {
        self.items.get(slot).and_then(Option::as_ref)
    }

    pub fn slot_of(&self, key: &ItemKey) -> Option<usize> {
        self.by_key.get(key).copied()
    }

    pub fn iter(&self) -> impl Iterator<Item = (usize, &Item)> {
        self.items.iter().enumerate().filter_map(|(i, it)| it.as_ref().map(|it| (i, it)))
    }

    pub fn len(&self) -> usize {
        self.by_key.len()
    }

    pub fn upsert(&mut self, item: Item) {
        self.remove(&item.key.clone());
        let slot = match self.free.pop() {
            Some(s) => s,
            None => {
                self.items.push(None);
                self.items.len() - 1
            }
        };
        push(&mut self.by_id, &item.id_lower, slot);
        let ids = self.ids.entry(item.id_lower.clone()).or_default();
        ids.push(slot);
        for n in &item.names {
            push(&mut self.by_name, n, slot);
        }
        for s in &item.slugs {
            push(&mut self.by_slug, s, slot);
        }
        self.by_key.insert(item.key.clone(), slot);
        self.items[slot] = Some(item);
        self.generation += 1;
        self.patch_table(slot);
    }

    /// The fuzzy table, built on first use.
    pub fn table(&self) -> &Table {
        self.table.get_or_init(|| Table::build(self.iter()))
    }

    fn patch_table(&mut self, slot: usize) {
        let Some(table) = self.table.get_mut() else { return };
        table.set(slot, self.items.get(slot).and_then(Option::as_ref));
        if table.wasteful() {
            self.table = OnceLock::new();
        }
    }

    pub fn remove(&mut self, key: &ItemKey) -> Option<Item> {
        let slot = self.by_key.remove(key)?;
        let item = self.items.get_mut(slot)?.take()?;
        pull(&mut self.by_id, &item.id_lower, slot);
        if let Some(v) = self.ids.get_mut(&item.id_lower) {
            v.retain(|&s| s != slot);
            if v.is_empty() {
                self.ids.remove(&item.id_lower);
            }
        }
        for n in &item.names {
            pull(&mut self.by_name, n, slot);
        }
        for s in &item.slugs {
            pull(&mut self.by_slug, s, slot);
        }
        self.free.push(slot);
        self.generation += 1;
        self.patch_table(slot);
        Some(item)
    }

    /// Slots whose lower-cased id starts with `prefix`.
    pub fn id_prefix(&self, prefix: &str) -> Vec<usize> {
        self.ids
            .range(prefix.to_string()..)
            .take_while(|(id, _)| id.starts_with(prefix))
            .flat_map(|(_, slots)| slots.iter().copied())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs() {
        assert_eq!(slug("  Auth  Refactor "), "auth-refactor");
        assert_eq!(slug("Résumé 日本語"), "résumé-日本語");
        assert_eq!(loose_slug("Fix: login (v2)!"), "fix-login-v2");
        assert_eq!(loose_slug("Ünïcode — ✓ test"), "ünïcode-test");
    }
}
