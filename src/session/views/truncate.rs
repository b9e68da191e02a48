//! pi's `truncateTail` (dist/core/tools/truncate.js).

use super::Truncated;

/// The last `max_bytes` of `line`, starting on a UTF-8 character boundary
/// (pi's `truncateStringToBytesFromEnd`).
fn tail_bytes(line: &str, max_bytes: usize) -> &str {
    if line.len() <= max_bytes {
        return line;
    }
    let mut start = line.len() - max_bytes;
    while start < line.len() && !line.is_char_boundary(start) {
        start += 1;
    }
    &line[start..]
}

/// pi's `truncateTail`: keep the newest part within `max_bytes` and `max_lines`, UTF-8 safe.
/// Lines are `\n`-separated (a trailing newline makes an empty last line, as in pi).
pub fn truncate_tail(text: &str, max_bytes: usize, max_lines: usize) -> Truncated {
    let total_bytes = text.len();
    let total_lines = text.split('\n').count();
    if total_lines <= max_lines && total_bytes <= max_bytes {
        return Truncated {
            text: text.to_string(),
            truncated: false,
            total_lines,
            total_bytes,
        };
    }
    let mut kept: Vec<&str> = Vec::new();
    let mut bytes = 0usize;
    for line in text.rsplit('\n') {
        if kept.len() >= max_lines {
            break;
        }
        let line_bytes = line.len() + usize::from(!kept.is_empty());
        if bytes + line_bytes > max_bytes {
            if kept.is_empty() {
                kept.push(tail_bytes(line, max_bytes));
            }
            break;
        }
        kept.push(line);
        bytes += line_bytes;
    }
    kept.reverse();
    Truncated {
        text: kept.join("\n"),
        truncated: true,
        total_lines,
        total_bytes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn untouched_when_within_limits() {
        let t = truncate_tail("a\nb", 10, 2);
        assert_eq!(
            (t.text.as_str(), t.truncated, t.total_lines, t.total_bytes),
            ("a\nb", false, 2, 3)
        );
        let empty = truncate_tail("", 10, 2);
        assert_eq!((empty.total_lines, empty.truncated), (1, false));
    }

    #[test]
    fn keeps_newest_lines() {
        let t = truncate_tail("1\n2\n3\n4", 100, 2);
        assert_eq!(
            (t.text.as_str(), t.truncated, t.total_lines),
            ("3\n4", true, 4)
        );
    }

    #[test]
    fn byte_limit_counts_newlines() {
        // "ccc" (3) + "\nbb" (3) = 6 fits; adding "\naaaa" would exceed 8.
        let t = truncate_tail("aaaa\nbb\nccc", 8, 100);
        assert_eq!(t.text, "bb\nccc");
    }

    #[test]
    fn last_line_over_limit_is_cut_on_a_char_boundary() {
        let t = truncate_tail("x\néééé", 5, 100);
        // 5 bytes back from the end falls inside 'é'; move forward to a boundary.
        assert_eq!(t.text, "éé");
        assert!(t.truncated);
    }

    #[test]
    fn trailing_newline_is_an_empty_last_line() {
        let t = truncate_tail("a\nb\n", 100, 2);
        assert_eq!(t.text, "b\n");
    }
}
