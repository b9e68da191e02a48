//! Okapi BM25 over the windows of one branch.

use std::collections::{HashMap, HashSet};

const K1: f64 = 1.2;
const B: f64 = 0.75;

/// One score per document (0 when no query term occurs in it).
pub fn scores(docs: &[&[String]], query: &[String]) -> Vec<f64> {
    let terms: HashSet<&str> = query.iter().map(String::as_str).collect();
    if docs.is_empty() || terms.is_empty() {
        return vec![0.0; docs.len()];
    }
    let n = docs.len() as f64;
    let avg_len = docs.iter().map(|d| d.len()).sum::<usize>() as f64 / n;
    let avg_len = avg_len.max(1.0);
    let mut tf: Vec<HashMap<&str, u32>> = Vec::with_capacity(docs.len());
    let mut df: HashMap<&str, u32> = HashMap::new();
    for doc in docs {
        let mut counts: HashMap<&str, u32> = HashMap::new();
        for token in doc.iter() {
            if let Some(term) = terms.get(token.as_str()) {
                *counts.entry(term).or_default() += 1;
            }
        }
        for term in counts.keys() {
            *df.entry(term).or_default() += 1;
        }
        tf.push(counts);
    }
    docs.iter()
        .zip(&tf)
        .map(|(doc, counts)| {
            let len = doc.len() as f64;
            counts
                .iter()
                .map(|(term, &f)| {
                    let d = f64::from(df.get(term).copied().unwrap_or(0));
                    let idf = (1.0 + (n - d + 0.5) / (d + 0.5)).ln();
                    let f = f64::from(f);
                    idf * f * (K1 + 1.0) / (f + K1 * (1.0 - B + B * len / avg_len))
                })
                .sum()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn rare_terms_outweigh_common_ones() {
        let docs = [
            toks("cache redis cache"),
            toks("cache lfu eviction"),
            toks("billing stripe"),
        ];
        let refs: Vec<&[String]> = docs.iter().map(|d| d.as_slice()).collect();
        let s = scores(&refs, &toks("lfu cache"));
        assert!(s[1] > s[0], "{s:?}");
        assert_eq!(s[2], 0.0);
    }
}
