//! A compact copy of every item's fuzzy fields for the fuzzy scan: per field
//! its character mask, weight, lower-cased ASCII text and the matcher's
//! bonus at each byte of it (as marks), in flat arrays.
//! A fuzzy lookup walks all of them; reading the items themselves (scattered
//! heap objects) for every field cost more than the checks. Built on the
//! first fuzzy lookup, then patched slot by slot as items change. Each slot
//! also has its project as a number, so "is this the current project's
//! session" costs no visit to the item either.

use std::collections::HashMap;

use nucleo_matcher::Utf32Str;

use super::bound;
use super::index::Item;

/// Text length marking a field that is not ASCII (its text is not copied).
const NOT_ASCII: u32 = u32::MAX;
/// The project number of an empty slot or an empty working directory.
const NO_PROJECT: u32 = u32::MAX;
/// The owner of a row no slot points at any more.
const DEAD: u32 = u32::MAX;

#[derive(Clone, Copy)]
pub(crate) struct Row {
    pub weight: f64,
    /// Index into the item's `fields()`.
    pub field: u8,
    start: u32,
    len: u32,
}

#[derive(Default)]
pub(crate) struct Table {
    rows: Vec<Row>,
    text: Vec<u8>,
    /// nucleo's bonus for a match at each byte of `text`, as marks.
    marks: Vec<u8>,
    /// Row range of each slot.
    slots: Vec<(u32, u32)>,
    /// Per row, densely for the first filter of a lookup: its character
    /// mask, and its slot ([`DEAD`] once no slot points at it).
    masks: Vec<u64>,
    owners: Vec<u32>,
    /// Project number of each slot ([`NO_PROJECT`] for none).
    projects: Vec<u32>,
    /// Project numbers by working directory (without trailing slashes).
    project_ids: HashMap<String, u32>,
    /// Rows (and their text) no slot points at any more.
    dead_rows: usize,
}

impl Table {
    pub fn build<'a>(items: impl Iterator<Item = (usize, &'a Item)>) -> Table {
        let mut t = Table::default();
        for (slot, item) in items {
            t.set(slot, Some(item));
        }
        t
    }

    /// Point `slot` at `item`'s fields (or at nothing).
    pub fn set(&mut self, slot: usize, item: Option<&Item>) {
        if self.slots.len() <= slot {
            self.slots.resize(slot + 1, (0, 0));
            self.projects.resize(slot + 1, NO_PROJECT);
        }
        self.projects[slot] = match item.map(|it| project_key(&it.entry.cwd)) {
            Some(cwd) if !cwd.is_empty() => {
                let next = self.project_ids.len() as u32;
                *self.project_ids.entry(cwd.to_string()).or_insert(next)
            }
            _ => NO_PROJECT,
        };
        let (a, b) = self.slots[slot];
        self.dead_rows += (b - a) as usize;
        if let Some(owners) = self.owners.get_mut(a as usize..b as usize) {
            owners.fill(DEAD);
        }
        let start = self.rows.len() as u32;
        for (i, f) in item.map_or(&[][..], Item::fields).iter().enumerate() {
            let (start, len) = match f.text.slice(..) {
                Utf32Str::Ascii(bytes) => {
                    let at = self.text.len() as u32;
                    self.text.extend(bytes.iter().map(u8::to_ascii_lowercase));
                    self.marks.extend(bound::marks(bytes));
                    (at, bytes.len() as u32)
                }
                Utf32Str::Unicode(_) => (0, NOT_ASCII),
            };
            self.rows.push(Row { weight: f.weight, field: i as u8, start, len });
            self.masks.push(f.mask);
            self.owners.push(slot as u32);
        }
        self.slots[slot] = (start, self.rows.len() as u32);
    }

    /// The slots, ascending, with a field containing every character of
    /// `mask`: one pass over the masks instead of a visit to every slot.
    pub fn slots_with_chars(&self, mask: u64) -> Vec<usize> {
        let mut out = Vec::new();
        let mut last = DEAD;
        for (&m, &owner) in self.masks.iter().zip(&self.owners) {
            // (A slot's rows are adjacent: its first passing row adds it.)
            if mask & !m == 0 && owner != last && owner != DEAD {
                out.push(owner as usize);
                last = owner;
            }
        }
        // Slots patched later have their rows at the end.
        out.sort_unstable();
        out.dedup();
        out
    }

    /// Mostly rows that no slot uses: rebuilding is cheaper than keeping them.
    pub fn wasteful(&self) -> bool {
        self.dead_rows > 1024 && self.dead_rows > self.rows.len() / 2
    }

    /// A test for "the item in this slot is one of `cwd`'s sessions" (the
    /// same answer as `matching::in_project`).
    pub fn in_project(&self, cwd: &str) -> impl Fn(usize) -> bool + Sync + '_ {
        let id = match project_key(cwd) {
            "" => None,
            key => self.project_ids.get(key).copied(),
        };
        move |slot| id.is_some_and(|id| self.projects.get(slot) == Some(&id))
    }

    /// The slot's fields: each one's character mask and row.
    pub fn rows(&self, slot: usize) -> impl Iterator<Item = (u64, &Row)> {
        let range = self.slots.get(slot).map_or(0..0, |&(a, b)| a as usize..b as usize);
        let masks = self.masks.get(range.clone()).unwrap_or(&[]);
        masks.iter().copied().zip(self.rows.get(range).unwrap_or(&[]))
    }

    /// The field's text, lower-cased, and the marks of its bytes (for
    /// [`bound::Needles::scan`]), when it is ASCII.
    pub fn ascii(&self, row: &Row) -> Option<(&[u8], &[u8])> {
        if row.len == NOT_ASCII {
            return None;
        }
        let range = row.start as usize..(row.start + row.len) as usize;
        Some((self.text.get(range.clone())?, self.marks.get(range)?))
    }
}

/// A working directory as projects are compared: without trailing slashes.
pub(crate) fn project_key(cwd: &str) -> &str {
    cwd.trim_end_matches('/')
}
