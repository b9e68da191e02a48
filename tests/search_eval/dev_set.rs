//! The development set's queries (`tests/fixtures/search-eval/queries.jsonl`)
//! and their split: a query is in the holdout half when the first byte of
//! SHA-256 of its id is odd, in the tune half otherwise (the README's rule;
//! computed here, never chosen by hand).

use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::support::corpus::search_eval_dir;

/// Which half of the set a query is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Half {
    /// May be looked at, query by query, while choosing anything.
    Tune,
    /// Reported, never looked at while choosing.
    Holdout,
}

impl Half {
    pub fn of(id: &str) -> Half {
        if Sha256::digest(id.as_bytes())[0] & 1 == 1 {
            Half::Holdout
        } else {
            Half::Tune
        }
    }

    /// Before [`queries`] computes it (serde needs a default).
    fn unset() -> Half {
        Half::Holdout
    }

    pub fn name(self) -> &'static str {
        match self {
            Half::Tune => "tune",
            Half::Holdout => "holdout",
        }
    }
}

/// One query of the set: a line of `queries.jsonl` and its half.
#[derive(Debug, Clone, Deserialize)]
pub struct DevQuery {
    pub id: String,
    /// The target session's full id.
    pub target: String,
    /// What the user types.
    pub query: String,
    /// mid-session, paraphrase, keyword, error, near-twin, file, other.
    pub kind: String,
    /// Who wrote it: A (over the shared sessions) or B (over the new ones).
    pub author: String,
    #[serde(skip, default = "Half::unset")]
    pub half: Half,
}

/// Every query of the set, in file order, with its half.
pub fn queries() -> Vec<DevQuery> {
    let path = search_eval_dir().join("queries.jsonl");
    let text = std::fs::read_to_string(&path).expect("the development set's queries");
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .enumerate()
        .map(|(n, line)| {
            let query: DevQuery = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("{}:{}: {e}", path.display(), n + 1));
            DevQuery {
                half: Half::of(&query.id),
                ..query
            }
        })
        .collect()
}

/// The README's figures: 142 queries, 72 holdout and 70 tune.
#[test]
fn the_split_is_the_readmes() {
    let queries = queries();
    let holdout = queries.iter().filter(|q| q.half == Half::Holdout).count();
    assert_eq!((queries.len(), holdout), (142, 72));
    let ids: std::collections::HashSet<&str> = queries.iter().map(|q| q.id.as_str()).collect();
    assert_eq!(ids.len(), queries.len(), "query ids are unique");
}
