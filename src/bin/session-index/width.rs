//! Output as wide as the terminal: tables give up width from their widest
//! column (cut with `…`), prose wraps at word boundaries. Output that is not
//! a terminal (a pipe, a file) and `--wide` keep every line whole.

use std::io::IsTerminal;

use session_index::text::{clip, Keep};

/// `--wide`, shared by the commands that print tables or prose.
#[derive(Debug, Clone, Copy, clap::Args)]
pub struct Wide {
    /// Full lines even on a terminal narrower than them (as when piped).
    #[arg(long)]
    wide: bool,
}

impl Wide {
    /// The width to fit: the terminal's (`$COLUMNS` when set), `None` for
    /// no limit (not a terminal, or `--wide`).
    pub fn columns(&self) -> Option<usize> {
        if self.wide || !std::io::stdout().is_terminal() {
            return None;
        }
        terminal_columns()
    }
}

/// A note on stderr (`session-index: …`), wrapped to the terminal when
/// stderr is one, its continuation lines indented.
pub fn note(text: &str) {
    let width = std::io::stderr()
        .is_terminal()
        .then(terminal_columns)
        .flatten();
    eprintln!("{}", wrap(text, width, "  "));
}

/// The terminal's width (`$COLUMNS` when set), if it is usable.
fn terminal_columns() -> Option<usize> {
    let from_env = std::env::var("COLUMNS").ok().and_then(|c| c.parse().ok());
    from_env
        .or_else(|| terminal_size::terminal_size().map(|(w, _)| usize::from(w.0)))
        .filter(|&w| w >= 20)
}

/// Characters a cell takes on screen (one per char: the tables hold no
/// double-width text worth measuring).
fn cells(text: &str) -> usize {
    text.chars().count()
}

/// Rows of cells as columns two spaces apart, the first row a header. With a
/// `width`, the widest column gives up what is too much (then the next
/// widest, never below its header), its cells cut per its [`Keep`].
pub fn table(rows: &[Vec<String>], keep: &[Keep], width: Option<usize>) -> String {
    let mut widths: Vec<usize> = Vec::new();
    for row in rows {
        widths.resize(widths.len().max(row.len()), 0);
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cells(cell));
        }
    }
    if let Some(width) = width {
        shrink(
            &mut widths,
            rows.first().map(Vec::as_slice).unwrap_or(&[]),
            width,
        );
    }
    let mut out = String::new();
    for row in rows {
        let line: Vec<String> = row
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(i, (cell, &w))| {
                let cell = clip(cell, w, keep.get(i).copied().unwrap_or(Keep::Head));
                format!("{cell:<w$}")
            })
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    out
}

/// Narrow the widest column, a character at a time (so equally wide ones
/// share the cut), until the row fits `width`; never below its header.
fn shrink(widths: &mut [usize], header: &[String], width: usize) {
    let gaps = 2 * widths.len().saturating_sub(1);
    let floor = |i: usize| header.get(i).map_or(1, |h| cells(h)).max(4);
    while widths.iter().sum::<usize>() + gaps > width {
        let widest = widths
            .iter()
            .enumerate()
            .filter(|&(i, &w)| w > floor(i))
            .max_by_key(|&(_, &w)| w)
            .map(|(i, _)| i);
        match widest {
            Some(i) => widths[i] -= 1,
            None => return,
        }
    }
}

/// `text` wrapped at word boundaries to `width`, every line after the first
/// starting with `indent`; a word longer than a line is cut with `…`.
pub fn wrap(text: &str, width: Option<usize>, indent: &str) -> String {
    let Some(width) = width else {
        return text.to_string();
    };
    let mut out = String::new();
    let mut used = 0;
    for word in text.split_whitespace() {
        let room = width.saturating_sub(cells(indent)).max(1);
        let word = clip(word, room, Keep::Head);
        if used > 0 && used + 1 + cells(&word) > width {
            out.push('\n');
            out.push_str(indent);
            used = cells(indent);
        } else if used > 0 {
            out.push(' ');
            used += 1;
        }
        out.push_str(&word);
        used += cells(&word);
    }
    out
}

/// `prefix`, then `text` wrapped to `width` with its continuation lines
/// under its first character (`  tags      a, b,` / `            c`).
pub fn hang(prefix: &str, text: &str, width: Option<usize>) -> String {
    let pad = " ".repeat(cells(prefix));
    let inner = wrap(text, width.map(|w| w.saturating_sub(pad.len()).max(8)), "");
    format!("{prefix}{}", inner.replace('\n', &format!("\n{pad}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows() -> Vec<Vec<String>> {
        [
            ["ID", "NAME", "PROJECT"],
            [
                "01a2",
                "Cron jobs for the nightly report and its retries",
                "~/work/reports",
            ],
            [
                "9f3c",
                "Short",
                "~/work/a-much-longer-project-directory-name",
            ],
        ]
        .map(|r| r.map(String::from).to_vec())
        .to_vec()
    }

    #[test]
    fn a_table_fits_by_cutting_its_widest_column() {
        let keep = [Keep::Head, Keep::Head, Keep::Tail];
        let full = table(&rows(), &keep, None);
        assert_eq!(full.lines().map(cells).max(), Some(99), "{full}");
        let fitted = table(&rows(), &keep, Some(60));
        assert!(fitted.lines().all(|l| cells(l) <= 60), "{fitted}");
        assert!(fitted.contains("Cron jobs for the nightly…"), "{fitted}");
        assert!(
            fitted.contains("…er-project-directory-name"),
            "the project keeps its end: {fitted}"
        );
        assert!(fitted.starts_with("ID    NAME"), "{fitted}");
        let narrow = table(&rows(), &keep, Some(20));
        assert!(
            narrow
                .lines()
                .all(|l| l.starts_with("ID ") || l.contains('…')),
            "{narrow}"
        );
    }

    #[test]
    fn prose_wraps_at_words() {
        let text = "Decided to keep the retries in the scheduler, not in the job itself.";
        let wrapped = wrap(text, Some(24), "  ");
        assert!(wrapped.lines().all(|l| cells(l) <= 24), "{wrapped}");
        assert_eq!(wrapped.lines().count(), 4, "{wrapped}");
        assert_eq!(wrap(text, None, "  "), text);
        let field = hang(
            "  tags      ",
            "retries, scheduler, nightly, report",
            Some(30),
        );
        assert_eq!(
            field,
            "  tags      retries,\n            scheduler,\n            nightly, report"
        );
    }
}
