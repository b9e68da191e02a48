//! The resolver's input: one [`Row`] per session (or per meta file whose
//! session is missing), a [`SessionRecord`] with the keys it is looked up by,
//! computed once when the row is stored. Everything a row is matched on has
//! its `@@` references removed first ([`crate::resolve::syntax::without_references`]):
//! a session that mentions `@@cron-in-gitclaw` is not named by it.
//!
//! Rows come from the store's records ([`crate::store::cache`]), or, for
//! what the store does not hold, from file names and meta files.

use nucleo_matcher::Utf32String;

use crate::resolve::syntax::without_references;
use crate::store::SessionRecord;
pub use crate::text::slug;

/// A fuzzy-matchable field.
pub(crate) struct Field {
    pub text: Utf32String,
    /// Lower-cased, for the quick checks before the matcher.
    pub lower: String,
    /// Prose (a description, a first message): each word of a reference
    /// must occur in it as typed, not merely as letters in order, or almost
    /// any sentence would match a short word.
    pub prose: bool,
    /// Bit set of the ASCII letters and digits in the field ([`char_mask`]).
    pub mask: u64,
    /// Field weight applied to the normalized score (names count most).
    pub weight: f64,
}

pub(crate) struct Row {
    /// A meta file whose session file is not in the sessions directory.
    pub missing: bool,
    /// Found in the files, where the store's [`crate::store::Gate`] keeps it in.
    pub refused: Option<crate::store::Refusal>,
    pub entry: SessionRecord,
    pub id_lower: String,
    /// Name keys ([`name_key`]) of pi's `session_info` name and the meta name.
    pub names: Vec<String>,
    /// Names, their slugs and loose slugs: what a slug reference is compared with.
    pub slugs: Vec<String>,
    /// The [`name_key`] of how the session is shown ([`SessionRecord::title`]):
    /// completion matches its words (a session without a name by its
    /// first-message title).
    pub title: String,
    /// Highest weight first; made on the first fuzzy lookup (exact lookups,
    /// the first build and lookups before it never need them).
    fields: std::sync::OnceLock<Vec<Field>>,
}

impl Row {
    /// A session is known by pi's own name and by its meta's, when they differ.
    pub fn new(entry: SessionRecord, missing: bool) -> Row {
        let mut names: Vec<String> = Vec::new();
        for n in entry.pi_name().into_iter().chain(entry.name.as_deref()) {
            let key = name_key(&without_references(n));
            if !key.is_empty() && !names.contains(&key) {
                names.push(key);
            }
        }
        let mut slugs = names.clone();
        for n in &names {
            for s in [slug(n), loose_slug(n)] {
                if !s.is_empty() && !slugs.contains(&s) {
                    slugs.push(s);
                }
            }
        }
        Row {
            title: name_key(&without_references(&entry.title())),
            id_lower: entry.id.to_lowercase(),
            missing,
            refused: None,
            entry,
            names,
            slugs,
            fields: Default::default(),
        }
    }

    pub fn fields(&self) -> &[Field] {
        self.fields.get_or_init(|| {
            let (entry, names) = (&self.entry, &self.names);
            let mut fields: Vec<Field> = names.iter().map(|n| field(n, 1.0, false)).collect();
            if !entry.tags.is_empty() {
                fields.push(field(
                    &without_references(&entry.tags.join(" ")),
                    0.95,
                    false,
                ));
            }
            if let Some(d) = entry.description.as_deref() {
                fields.push(field(&prose_head(d, 160), 0.85, true));
            }
            // Sessions never indexed and never named are still found by what they started with.
            if let Some(m) = entry.first_message.as_deref() {
                fields.push(field(
                    &prose_head(m, 120),
                    if names.is_empty() { 0.9 } else { 0.75 },
                    true,
                ));
            }
            fields
        })
    }
}

/// The first `chars` characters of a prose field, its references removed
/// (no ellipsis: the text is matched, never shown).
fn prose_head(text: &str, chars: usize) -> String {
    without_references(text).chars().take(chars).collect()
}

fn field(text: &str, weight: f64, prose: bool) -> Field {
    Field {
        mask: char_mask(text),
        lower: text.to_lowercase(),
        prose,
        text: Utf32String::from(text),
        weight,
    }
}

/// How a name is looked up: whitespace runs as one space, lower-cased.
pub(crate) fn name_key(name: &str) -> String {
    name.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

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

/// A forgiving slug: every run of non-alphanumeric characters (any script)
/// becomes one hyphen, so `Fix: login (v2)` is also `fix-login-v2`.
pub fn loose_slug(name: &str) -> String {
    let lower = name.to_lowercase();
    let parts: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|p| !p.is_empty())
        .collect();
    parts.join("-")
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
