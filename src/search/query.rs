//! Queries: the user's text parsed into words, phrases, exclusions and
//! filters, and turned into FTS5 `MATCH` expressions built here (user text
//! never reaches `MATCH` raw: every term is reduced to its letters and digits
//! and quoted). Sessions are ranked with `bm25()` over their whole text
//! (one `docs` row each); only the shown ones look at their messages' rows.

use rusqlite::types::Value as SqlValue;

use super::{rowids, session_row, Index, SearchError, SessionRow, COLUMNS, ROW_COLUMNS};

/// Start and end of a highlighted match inside [`Snippet::text`].
pub const MARK_START: char = '\u{2}';
pub const MARK_END: char = '\u{3}';
/// Sessions of the current project count this much more.
const CURRENT_PROJECT_BOOST: f64 = 1.5;

const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "did", "do", "does", "for", "from", "had", "has", "have",
    "how", "i", "if", "in", "into", "is", "it", "its", "me", "my", "of", "on", "or", "our", "so", "that", "the",
    "then", "there", "this", "to", "was", "we", "were", "what", "when", "where", "which", "who", "why", "with", "you",
];

/// A parsed query.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Query {
    /// Bare words: any of them matches, more matches rank higher; the last is also a prefix.
    pub words: Vec<String>,
    /// `"exact phrase"`: each must occur in the session.
    pub phrases: Vec<String>,
    /// `-word`, `-"phrase"`: sessions containing one are left out.
    pub exclude: Vec<String>,
    /// `file:PATH`: the path occurs in the files of the meta or in tool calls.
    pub files: Vec<String>,
    /// `tag:TAG`.
    pub tags: Vec<String>,
    /// Only sessions of this project (cwd).
    pub project: Option<String>,
    /// Sessions of this project are ranked first (by a factor).
    pub current_cwd: Option<String>,
    pub since_ms: Option<u64>,
    pub until_ms: Option<u64>,
    pub limit: usize,
}

/// One session found.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionHit {
    #[serde(flatten)]
    pub session: SessionRow,
    pub score: f64,
    pub snippets: Vec<Snippet>,
}

/// A matching piece of text, with the matched words between [`MARK_START`]
/// and [`MARK_END`].
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Snippet {
    /// The entry the text comes from; `None` for the meta (name, summary, tags...).
    pub entry_id: Option<String>,
    pub role: String,
    /// On a branch the session left (ranked lower).
    pub abandoned: bool,
    #[serde(serialize_with = "with_stars")]
    pub text: String,
}

impl Snippet {
    /// The text with the matches between `open` and `close`.
    pub fn marked(&self, open: &str, close: &str) -> String {
        self.text.replace(MARK_START, open).replace(MARK_END, close)
    }
}

fn with_stars<S: serde::Serializer>(text: &str, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&text.replace([MARK_START, MARK_END], "**"))
}

/// The letters and digits of `text` as one quoted FTS5 phrase (`None` when it has none).
fn phrase(text: &str) -> Option<String> {
    let tokens: Vec<&str> = text.split(|c: char| !c.is_alphanumeric()).filter(|t| !t.is_empty()).collect();
    (!tokens.is_empty()).then(|| format!("\"{}\"", tokens.join(" ")))
}

/// `2w`, `3d`, `12h`, `6m` (months), `1y` ago, or a date (`2026-11-01`, an ISO
/// time), as ms since the epoch; `end_of_day` takes a bare date's last moment.
pub fn parse_since(text: &str, now_ms: u64, end_of_day: bool) -> Result<u64, SearchError> {
    let text = text.trim();
    let bad = || SearchError::BadQuery(format!("{text:?} is not a time (try 2w, 3d, 12h or 2026-11-01)"));
    if let Some(unit) = text.chars().last().filter(|c| c.is_ascii_alphabetic()) {
        if let Ok(n) = text[..text.len() - 1].parse::<u64>() {
            let hours = match unit {
                'h' => 1,
                'd' => 24,
                'w' => 24 * 7,
                'm' => 24 * 30,
                'y' => 24 * 365,
                _ => return Err(bad()),
            };
            return Ok(now_ms.saturating_sub(n.saturating_mul(hours * 3_600_000)));
        }
    }
    let ms = crate::session::iso_to_ms(text);
    if ms <= 0 {
        return Err(bad());
    }
    let day = if end_of_day && text.len() == 10 { 86_400_000 - 1 } else { 0 };
    Ok(ms as u64 + day)
}

impl Query {
    /// Parse the user's text: words, `"phrases"`, `-exclusions`, `file:PATH`, `tag:TAG`.
    pub fn parse(text: &str) -> Result<Query, SearchError> {
        let mut query = Query { limit: 10, ..Query::default() };
        let mut rest = text.trim();
        while !rest.is_empty() {
            let negated = rest.starts_with('-') && rest.len() > 1;
            if negated {
                rest = &rest[1..];
            }
            let (token, quoted, after) = match rest.strip_prefix('"') {
                Some(inner) => match inner.find('"') {
                    Some(end) => (&inner[..end], true, &inner[end + 1..]),
                    None => (inner, true, ""),
                },
                None => {
                    let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
                    (&rest[..end], false, &rest[end..])
                }
            };
            rest = after.trim_start();
            let filter = |prefix: &str| -> Option<String> {
                let value = token.strip_prefix(prefix)?;
                Some(value.trim_matches('"').to_string())
            };
            if negated {
                query.exclude.push(token.to_string());
            } else if let (false, Some(path)) = (quoted, filter("file:")) {
                query.files.push(path);
            } else if let (false, Some(tag)) = (quoted, filter("tag:")) {
                query.tags.push(tag);
            } else if quoted {
                query.phrases.push(token.to_string());
            } else {
                query.words.push(token.to_string());
            }
        }
        let all = query.words.iter().chain(&query.phrases).chain(&query.exclude).chain(&query.files).chain(&query.tags);
        if all.clone().next().is_some() && all.clone().all(|t| phrase(t).is_none()) {
            return Err(SearchError::BadQuery(format!("{text:?} has no letters or digits to search for")));
        }
        Ok(query)
    }

    /// The ranking expression: any word or phrase (the last word as a
    /// prefix). Words like "the" or "did" match nearly every row and rank
    /// nothing: they are left out when other words remain.
    fn match_expr(&self) -> Option<String> {
        let stop = |w: &&String| STOP_WORDS.contains(&w.to_lowercase().as_str());
        let all_stop = self.words.iter().all(|w| stop(&w));
        let mut terms: Vec<String> =
            self.words.iter().filter(|w| all_stop || !stop(w)).filter_map(|w| phrase(w)).collect();
        if let Some(last) = terms.last_mut() {
            // A whole word also counts as itself, so it ranks above longer words it begins.
            *last = format!("({last} OR {last}*)");
        }
        terms.extend(self.phrases.iter().filter_map(|p| phrase(p)));
        (!terms.is_empty()).then(|| terms.join(" OR "))
    }

    /// SQL conditions on the session `s` for the filters, with their parameters.
    fn conditions(&self, params: &mut Vec<SqlValue>) -> String {
        let mut sql = String::new();
        let required = [
            (&self.phrases, "IN", ""),
            (&self.tags, "IN", "{tags} : "),
            (&self.files, "IN", "{files assistant tool} : "),
            (&self.exclude, "NOT IN", ""),
        ];
        for (items, cond, columns) in required {
            for item in items.iter().filter_map(|t| phrase(t)) {
                params.push(SqlValue::Text(format!("{columns}{item}")));
                sql.push_str(&format!(" AND s.sid {cond} (SELECT rowid FROM docs WHERE docs MATCH ?{})", params.len()));
            }
        }
        let filters = [
            ("s.cwd =", self.project.clone().map(SqlValue::Text)),
            ("s.modified_ms >=", self.since_ms.map(|ms| SqlValue::Integer(ms as i64))),
            ("s.modified_ms <=", self.until_ms.map(|ms| SqlValue::Integer(ms as i64))),
        ];
        for (cond, value) in filters {
            if let Some(value) = value {
                params.push(value);
                sql.push_str(&format!(" AND {cond} ?{}", params.len()));
            }
        }
        sql
    }
}

impl Index {
    /// Sessions matching `query`, best first, at most `query.limit`.
    pub fn search(&self, query: &Query) -> Result<Vec<SessionHit>, SearchError> {
        self.run(query).map_err(|e| match e.sqlite_error_code() {
            // Cannot happen with the expressions built here; said plainly if it does.
            Some(rusqlite::ErrorCode::Unknown) => SearchError::BadQuery(e.to_string()),
            _ => self.sql(e),
        })
    }

    /// Stored before `privacy.exclude` named it: never shown.
    fn excluded(&self, hit: &SessionHit) -> bool {
        self.privacy.excludes(&hit.session.cwd, &hit.session.path)
    }

    fn run(&self, query: &Query) -> rusqlite::Result<Vec<SessionHit>> {
        let mut params = Vec::new();
        let Some(expr) = query.match_expr() else {
            // Filters only: the newest sessions that pass them.
            let cond = query.conditions(&mut params);
            let sql = format!(
                "SELECT {ROW_COLUMNS}, 0.0 FROM sessions s WHERE 1 {cond} ORDER BY s.modified_ms DESC LIMIT {}",
                query.limit
            );
            let hits: Vec<SessionHit> = self
                .conn
                .prepare(&sql)?
                .query_map(rusqlite::params_from_iter(params), hit)?
                .collect::<rusqlite::Result<_>>()?;
            return Ok(hits.into_iter().filter(|h| !self.excluded(h)).collect());
        };
        params.push(SqlValue::Text(expr.clone()));
        params.push(query.current_cwd.clone().map_or(SqlValue::Null, SqlValue::Text));
        let cond = query.conditions(&mut params);
        let weights: Vec<String> = COLUMNS.iter().map(|(_, w)| w.to_string()).collect();
        let weights = weights.join(", ");
        // Sessions ranked by their whole text, the current project first.
        let sql = format!(
            "SELECT {ROW_COLUMNS}, -bm25(docs, {weights}) * IIF(s.cwd = ?2, {CURRENT_PROJECT_BOOST}, 1.0) AS score, s.sid \
             FROM docs JOIN sessions s ON s.sid = docs.rowid WHERE docs MATCH ?1 {cond} \
             ORDER BY score DESC, s.modified_ms DESC LIMIT {}",
            query.limit
        );
        let mut stmt = self.conn.prepare_cached(&sql)?;
        let hits: Vec<(SessionHit, i64)> = stmt
            .query_map(rusqlite::params_from_iter(params), |r| Ok((hit(r)?, r.get(17)?)))?
            .collect::<rusqlite::Result<Vec<_>>>()?
            .into_iter()
            .filter(|(h, _)| !self.excluded(h))
            .collect();
        // Snippets: each shown session's best rows (found by its rowid range).
        let mut best = self.conn.prepare_cached(&format!(
            "SELECT rowid, snippet(fts, -1, char(2), char(3), '…', 14) FROM fts \
             WHERE fts MATCH ?1 AND rowid BETWEEN ?2 AND ?3 ORDER BY bm25(fts, {weights}) LIMIT 2"
        ))?;
        let mut entry = self.conn.prepare_cached("SELECT entry_id, role, active FROM entries WHERE rowid = ?1")?;
        let mut found = Vec::with_capacity(hits.len());
        for (mut hit, sid) in hits {
            let (first, last) = rowids(sid);
            let rows = best.query_map(rusqlite::params![expr, first, last], |r| Ok((r.get(0)?, r.get(1)?)))?;
            for row in rows {
                let (rowid, text): (i64, String) = row?;
                hit.snippets.push(if rowid == first {
                    Snippet { entry_id: None, role: "meta".into(), abandoned: false, text }
                } else {
                    let (entry_id, role, active) =
                        entry.query_row([rowid], |r| Ok((r.get(0)?, r.get(1)?, r.get::<_, bool>(2)?)))?;
                    Snippet { entry_id: Some(entry_id), role, abandoned: !active, text }
                });
            }
            found.push(hit);
        }
        Ok(found)
    }
}

/// A session row followed by its score.
fn hit(r: &rusqlite::Row<'_>) -> rusqlite::Result<SessionHit> {
    Ok(SessionHit { session: session_row(r)?, score: r.get(16)?, snippets: Vec::new() })
}
