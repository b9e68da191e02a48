//! Ticket-like entities in free text, as tags.

/// Ticket-like entities: `ABC-123`, `#123`, GitHub pull request and issue links.
pub fn entities(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for raw in text.split(|c: char| {
        c.is_whitespace()
            || matches!(
                c,
                ',' | ';' | '(' | ')' | '[' | ']' | '<' | '>' | '"' | '\'' | '`'
            )
    }) {
        let word = raw.trim_end_matches(['.', ':', '!', '?']);
        if let Some(tag) = github_link(word) {
            out.push(tag);
        } else if let Some(number) = word.strip_prefix('#') {
            if (1..=6).contains(&number.len()) && number.bytes().all(|b| b.is_ascii_digit()) {
                out.push(format!("issue:#{number}"));
            }
        } else if is_ticket(word) {
            out.push(format!("ticket:{word}"));
        }
    }
    out
}

fn is_ticket(word: &str) -> bool {
    const NOT_TICKETS: &[&str] = &[
        "UTF", "SHA", "ISO", "MD", "AES", "HTTP", "TLS", "GPT", "RFC", "CVE", "TODO",
    ];
    let Some((project, number)) = word.split_once('-') else {
        return false;
    };
    (2..=10).contains(&project.len())
        && project.starts_with(|c: char| c.is_ascii_uppercase())
        && project
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
        && (1..=6).contains(&number.len())
        && number.bytes().all(|b| b.is_ascii_digit())
        && !NOT_TICKETS.contains(&project)
}

fn github_link(word: &str) -> Option<String> {
    let start = word.find("github.com/")?;
    let parts: Vec<&str> = word[start + "github.com/".len()..].split('/').collect();
    let [owner, repo, kind, number, ..] = parts[..] else {
        return None;
    };
    let number: String = number.chars().take_while(char::is_ascii_digit).collect();
    if number.is_empty() || owner.is_empty() || repo.is_empty() {
        return None;
    }
    let prefix = match kind {
        "pull" => "pr",
        "issues" => "issue",
        _ => return None,
    };
    Some(format!("{prefix}:{owner}/{repo}#{number}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entities_are_found() {
        let text =
            "Fix ABC-123 and #42 (see https://github.com/o/r/pull/7, https://github.com/o/r/issues/9). UTF-8 is fine.";
        assert_eq!(
            entities(text),
            vec!["ticket:ABC-123", "issue:#42", "pr:o/r#7", "issue:o/r#9"]
        );
    }
}
