//! A compact copy of every item's fuzzy fields for the fuzzy scan: per field
//! its character mask, weight and lower-cased ASCII text, in two flat arrays.
//! A fuzzy lookup walks all of them; reading the items themselves (scattered
//! heap objects) for every field cost more than the checks. Built on the
//! first fuzzy lookup, then patched slot by slot as items change.

use nucleo_matcher::Utf32Str;

use super::index::Item;

/// Text length marking a field that is not ASCII (its text is not copied).
const NOT_ASCII: u32 = u32::MAX;

#[derive(Clone, Copy)]
pub(crate) struct Row {
    pub mask: u64,
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
    /// Row range of each slot.
    slots: Vec<(u32, u32)>,
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
        }
        let (a, b) = self.slots[slot];
        self.dead_rows += (b - a) as usize;
        let start = self.rows.len() as u32;
        for (i, f) in item.map_or(&[][..], Item::fields).iter().enumerate() {
            let (start, len) = match f.text.slice(..) {
                Utf32Str::Ascii(bytes) => {
                    let at = self.text.len() as u32;
                    self.text.extend(bytes.iter().map(u8::to_ascii_lowercase));
                    (at, bytes.len() as u32)
                }
                Utf32Str::Unicode(_) => (0, NOT_ASCII),
            };
            self.rows.push(Row { mask: f.mask, weight: f.weight, field: i as u8, start, len });
        }
        self.slots[slot] = (start, self.rows.len() as u32);
    }

    /// Mostly rows that no slot uses: rebuilding is cheaper than keeping them.
    pub fn wasteful(&self) -> bool {
        self.dead_rows > 1024 && self.dead_rows > self.rows.len() / 2
    }

    pub fn rows(&self, slot: usize) -> &[Row] {
        match self.slots.get(slot) {
            Some(&(a, b)) => self.rows.get(a as usize..b as usize).unwrap_or(&[]),
            None => &[],
        }
    }

    /// The field's text, lower-cased, when it is ASCII.
    pub fn ascii(&self, row: &Row) -> Option<&[u8]> {
        if row.len == NOT_ASCII {
            return None;
        }
        self.text.get(row.start as usize..(row.start + row.len) as usize)
    }
}
