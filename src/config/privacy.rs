//! `privacy.exclude`: globs over a session's project directory (cwd) and its
//! file path, compiled once into one regular-expression set. The rules users
//! read in the README (`*` and `?` within a segment, `**` across segments,
//! `~/` for the home directory, a glob not starting with `/` or `~/` matching
//! from any segment, a matching directory covering what is under it) are a
//! translation to `regex`, not a matcher of our own.
//!
//! Why not `globset`: it matches `?` against one byte, so `/r/?x` misses
//! `/r/éx` (globset 0.4.22, checked), and the patterns here are small enough
//! that the translation is a dozen lines over a crate the plugin already uses.
//! The store's gate ([`crate::store::Gate`]) is the one place that asks.

use std::path::Path;
use std::sync::OnceLock;

use garde::Validate;
use regex::RegexSet;
use serde::{Deserialize, Serialize};

/// Sessions kept away from every model and index: never indexed, injected by `@@`,
/// queried or searched.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Validate)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct PrivacyConfig {
    /// Globs matched against a session's project directory (cwd) and its file path.
    /// `*` and `?` stay within a path segment, `**` crosses segments, `~/` is the home
    /// directory; a glob that does not start with `/` or `~/` may match from any segment
    /// (`*-private`, `clients/acme`), and a directory that matches covers what is under it.
    #[garde(length(max = 256), inner(length(chars, min = 1, max = 512)))]
    pub exclude: Vec<String>,
    /// `exclude` compiled, on first use.
    #[serde(skip)]
    #[garde(skip)]
    compiled: OnceLock<Option<RegexSet>>,
}

impl PartialEq for PrivacyConfig {
    fn eq(&self, other: &Self) -> bool {
        self.exclude == other.exclude
    }
}

impl PrivacyConfig {
    /// Whether the session of project `cwd` stored at `path` is excluded.
    pub fn excludes(&self, cwd: &str, path: &Path) -> bool {
        if self.exclude.is_empty() {
            return false;
        }
        let compiled = self.compiled.get_or_init(|| {
            let home = std::env::var("HOME").unwrap_or_default();
            let patterns = self.exclude.iter().map(|glob| pattern(glob, &home));
            RegexSet::new(patterns)
                .inspect_err(|e| tracing::warn!("privacy.exclude: {e}; excluding every session"))
                .ok()
        });
        let Some(set) = compiled else {
            // Never keep nothing out by mistake.
            return true;
        };
        let path = path.to_string_lossy();
        [cwd, &path]
            .iter()
            .any(|s| !s.is_empty() && set.is_match(s))
    }
}

/// One glob as a regular expression over a whole path: the glob over a run of
/// the path's segments that starts at its beginning (anchored: `/…`, `~/…`)
/// or after any `/`, and ends at the end or before any `/`.
fn pattern(glob: &str, home: &str) -> String {
    let glob = glob.trim_end_matches('/');
    let (glob, anchored) = match glob.strip_prefix("~/") {
        Some(rest) => (format!("{}/{rest}", home.trim_end_matches('/')), true),
        None => (glob.to_string(), glob.starts_with('/')),
    };
    let start = if anchored { "^" } else { "^(?:.*/)?" };
    format!("(?s){start}{}(?:/.*)?$", translate(&glob))
}

/// The glob's own syntax in regex: `**/` any segments (or none), `**`
/// anything, `*` anything within a segment, `?` one character but `/`;
/// every other character stands for itself.
fn translate(glob: &str) -> String {
    let mut out = String::new();
    let mut rest = glob;
    while let Some(c) = rest.chars().next() {
        let (regex, len) = if rest.starts_with("**/") {
            ("(?:.*/)?".to_string(), 3)
        } else if rest.starts_with("**") {
            (".*".to_string(), 2)
        } else if c == '*' {
            ("[^/]*".to_string(), 1)
        } else if c == '?' {
            ("[^/]".to_string(), 1)
        } else {
            (regex::escape(&c.to_string()), c.len_utf8())
        };
        out.push_str(&regex);
        rest = &rest[len..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The recursive matcher these patterns replace, kept as the reference.
    fn reference_covers(glob: &str, path: &str, home: &str) -> bool {
        let glob = glob.trim_end_matches('/');
        let (glob, anchored) = match glob.strip_prefix("~/") {
            Some(rest) => (format!("{}/{rest}", home.trim_end_matches('/')), true),
            None => (glob.to_string(), glob.starts_with('/')),
        };
        let glob: Vec<char> = glob.chars().collect();
        let cuts = |s: &str| s.match_indices('/').map(|(i, _)| i).collect::<Vec<_>>();
        let starts =
            std::iter::once(0).chain(cuts(path).into_iter().map(|i| i + 1).filter(|_| !anchored));
        starts.into_iter().any(|start| {
            let rest = &path[start..];
            cuts(rest)
                .into_iter()
                .chain([rest.len()])
                .any(|end| reference_match(&glob, &rest[..end].chars().collect::<Vec<_>>()))
        })
    }

    fn reference_match(p: &[char], s: &[char]) -> bool {
        match p {
            [] => s.is_empty(),
            ['*', '*', '/', rest @ ..] => {
                reference_match(rest, s)
                    || (0..s.len()).any(|i| s[i] == '/' && reference_match(rest, &s[i + 1..]))
            }
            ['*', '*', rest @ ..] => (0..=s.len()).any(|i| reference_match(rest, &s[i..])),
            ['*', rest @ ..] => (0..=s.len())
                .take_while(|&i| i == 0 || s[i - 1] != '/')
                .any(|i| reference_match(rest, &s[i..])),
            ['?', rest @ ..] => {
                matches!(s, [c, tail @ ..] if *c != '/' && reference_match(rest, tail))
            }
            [c, rest @ ..] => matches!(s, [d, tail @ ..] if d == c && reference_match(rest, tail)),
        }
    }

    /// Random globs and paths over a small alphabet (segments, `*`, `**`,
    /// `?`, `~/`, a non-ASCII letter, regex metacharacters): the patterns
    /// decide as the reference matcher does.
    #[test]
    fn patterns_match_as_the_recursive_matcher_did() {
        const GLOB: &[&str] = &["a", "b", "é", "/", "*", "**", "?", ".", "[x]", "~/", "-"];
        const PATH: &[&str] = &["a", "b", "é", "/", "/", ".", "[x]", "-", "ab"];
        let home = std::env::var("HOME").unwrap_or_default();
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        let mut checked = 0;
        for _ in 0..2000 {
            let glob: String = (0..1 + next(5)).map(|_| GLOB[next(GLOB.len())]).collect();
            let mut path: String = (0..1 + next(7)).map(|_| PATH[next(PATH.len())]).collect();
            if next(3) == 0 {
                path = format!("{}/{path}", home.trim_end_matches('/'));
            } else if !path.starts_with('/') {
                path.insert(0, '/');
            }
            let privacy = PrivacyConfig {
                exclude: vec![glob.clone()],
                ..PrivacyConfig::default()
            };
            assert_eq!(
                privacy.excludes("", Path::new(&path)),
                reference_covers(&glob, &path, &home),
                "glob {glob:?} path {path:?} ({})",
                pattern(&glob, &home)
            );
            checked += 1;
        }
        assert_eq!(checked, 2000);
    }
}
