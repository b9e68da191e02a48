//! Lexical tokens for scoring conversation windows against a question.
//!
//! Conversations about code mix prose, identifiers (`getUserName`,
//! `token_bucket`), paths (`src/limiter.rs`), tickets (`PROJ-103`) and text in
//! scripts without spaces. Each word-ish run yields its lower-cased whole form,
//! its identifier parts, and compounds joined by `.`, `/`, `-` or `:` are kept
//! whole too, so an exact path or ticket in the question scores highest.
//! CJK text, which has no spaces, is indexed as characters and bigrams.

/// Words that carry no meaning for retrieval (question words, pronouns, glue).
const STOP_WORDS: &[&str] = &[
    "a", "about", "after", "again", "all", "also", "an", "and", "any", "are", "as", "at", "be",
    "been", "before", "but", "by", "can", "could", "did", "do", "does", "done", "for", "from",
    "had", "has", "have", "he", "her", "here", "him", "his", "how", "i", "if", "in", "into", "is",
    "it", "its", "just", "let", "me", "my", "no", "not", "now", "of", "on", "or", "our", "please",
    "she", "should", "so", "some", "than", "that", "the", "their", "them", "then", "there",
    "these", "they", "this", "those", "to", "up", "us", "was", "we", "were", "what", "when",
    "where", "which", "who", "whom", "why", "will", "with", "would", "you", "your",
];

fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF      // Hiragana, Katakana
        | 0x3400..=0x4DBF    // CJK extension A
        | 0x4E00..=0x9FFF    // CJK unified ideographs
        | 0xAC00..=0xD7AF    // Hangul syllables
        | 0xF900..=0xFAFF    // CJK compatibility ideographs
        | 0x20000..=0x2A6DF) // CJK extension B
}

fn is_word_char(c: char) -> bool {
    (c.is_alphanumeric() || c == '_') && !is_cjk(c)
}

/// Tokens of `text`, in order, with repeats (term frequency matters).
pub fn tokenize(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if is_cjk(c) {
            let start = i;
            while i < chars.len() && is_cjk(chars[i]) {
                i += 1;
            }
            push_cjk(&chars[start..i], &mut out);
        } else if is_word_char(c) {
            // A compound: word runs joined by single joiner characters.
            let start = i;
            let mut runs = Vec::new();
            loop {
                let run_start = i;
                while i < chars.len() && is_word_char(chars[i]) {
                    i += 1;
                }
                runs.push((run_start, i));
                let joiner = |c: char| matches!(c, '.' | '/' | '-' | ':' | '\\');
                let joined = i + 1 < chars.len() && joiner(chars[i]) && is_word_char(chars[i + 1]);
                if !joined {
                    break;
                }
                i += 1;
            }
            for &(s, e) in &runs {
                push_word(&chars[s..e], &mut out);
            }
            if runs.len() > 1 {
                let compound: String = chars[start..i].iter().collect::<String>().to_lowercase();
                if compound.chars().count() <= 120 {
                    out.push(compound);
                }
            }
        } else {
            i += 1;
        }
    }
    out
}

fn push_cjk(run: &[char], out: &mut Vec<String>) {
    for (k, c) in run.iter().enumerate() {
        out.push(c.to_string());
        if let Some(next) = run.get(k + 1) {
            out.push([*c, *next].iter().collect());
        }
    }
}

/// One identifier-ish run: its whole lower-cased form plus its parts split at
/// `_`, camelCase and letter/digit boundaries.
fn push_word(run: &[char], out: &mut Vec<String>) {
    let whole: String = run.iter().collect::<String>().to_lowercase();
    let parts = split_identifier(run);
    let whole_is_part = parts.len() == 1;
    if !whole_is_part && whole.trim_matches('_').chars().count() > 1 {
        out.push(whole);
    }
    for part in parts {
        let lower = part.to_lowercase();
        if STOP_WORDS.binary_search(&lower.as_str()).is_ok() {
            continue;
        }
        let single_letter =
            lower.chars().count() == 1 && !lower.chars().all(|c| c.is_ascii_digit());
        if single_letter {
            continue;
        }
        out.push(stem(&lower));
    }
}

fn split_identifier(run: &[char]) -> Vec<String> {
    let mut parts = Vec::new();
    let mut current = String::new();
    for (k, &c) in run.iter().enumerate() {
        if c == '_' {
            if !current.is_empty() {
                parts.push(std::mem::take(&mut current));
            }
            continue;
        }
        let boundary = match current.chars().last() {
            None => false,
            Some(prev) => {
                let next_is_lower = run.get(k + 1).is_some_and(|n| n.is_lowercase());
                (prev.is_lowercase() && c.is_uppercase())
                    || (prev.is_uppercase() && c.is_uppercase() && next_is_lower)
                    || (prev.is_alphabetic() && c.is_ascii_digit())
                    || (prev.is_ascii_digit() && c.is_alphabetic())
            }
        };
        if boundary {
            parts.push(std::mem::take(&mut current));
        }
        current.push(c);
    }
    if !current.is_empty() {
        parts.push(current);
    }
    parts
}

/// A deliberately small English suffix stripper: plurals and common verb
/// endings, so "webhooks" finds "webhook" and "decided" finds "decide".
fn stem(word: &str) -> String {
    if !word.chars().all(|c| c.is_ascii_alphabetic()) || word.len() <= 3 {
        return word.to_string();
    }
    let n = word.len();
    let base = if let Some(base) = word.strip_suffix("ies").filter(|_| n > 4) {
        format!("{base}y")
    } else if let Some(base) = word.strip_suffix("ing").filter(|_| n > 5) {
        base.to_string()
    } else if let Some(base) = word.strip_suffix("ed").filter(|_| n > 4) {
        base.to_string()
    } else if word.ends_with("ss") || word.ends_with("us") || word.ends_with("is") {
        word.to_string()
    } else if let Some(base) = word.strip_suffix('s') {
        base.to_string()
    } else {
        word.to_string()
    };
    let trimmed = base.trim_end_matches('e');
    if trimmed.len() >= 3 {
        trimmed.to_string()
    } else {
        base
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn has(tokens: &[String], t: &str) -> bool {
        tokens.iter().any(|x| x == t)
    }

    #[test]
    fn stop_words_are_sorted_for_binary_search() {
        let mut sorted = STOP_WORDS.to_vec();
        sorted.sort_unstable();
        assert_eq!(sorted, STOP_WORDS);
    }

    #[test]
    fn identifiers_yield_whole_and_parts() {
        let t = tokenize("call getUserName and token_bucket, HTTPServer2");
        for want in [
            "getusername",
            "get",
            "user",
            "name",
            "token_bucket",
            "token",
            "bucket",
            "httpserver2",
            "http",
            "server",
            "2",
        ] {
            assert!(
                has(&t, &stem(want)) || has(&t, want),
                "{want} missing in {t:?}"
            );
        }
    }

    #[test]
    fn paths_and_tickets_are_kept_whole() {
        let t = tokenize("see src/limiter.rs for PROJ-103.");
        assert!(has(&t, "src/limiter.rs"), "{t:?}");
        assert!(has(&t, "limiter"), "{t:?}");
        assert!(has(&t, "proj-103"), "{t:?}");
        assert!(has(&t, "103"), "{t:?}");
    }

    #[test]
    fn stems_agree_between_forms() {
        assert_eq!(stem("webhooks"), stem("webhook"));
        assert_eq!(stem("decided"), stem("decide"));
        assert_eq!(stem("decisions"), stem("decision"));
        assert_eq!(stem("caching"), stem("cach"));
        assert_eq!(stem("entries"), stem("entry"));
    }

    #[test]
    fn unicode_text_is_indexed() {
        let t = tokenize("Résumé: 日本語のテスト 🚀 — مرحبا");
        assert!(has(&t, "résumé"), "{t:?}");
        assert!(has(&t, "日本"), "{t:?}");
        assert!(has(&t, "テ"), "{t:?}");
        assert!(has(&t, "مرحبا"), "{t:?}");
    }

    #[test]
    fn question_words_are_dropped() {
        let t = tokenize("What did we decide about the cache?");
        assert_eq!(t, vec![stem("decide"), stem("cache")]);
    }
}
