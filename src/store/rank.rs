//! Queries: the user's text parsed into words, phrases, exclusions and
//! filters, and turned into FTS5 `MATCH` expressions built here (user text
//! never reaches `MATCH` raw: every term is reduced to its letters and digits
//! and quoted). Sessions are ranked with `bm25()` over their `docs` rows
//! (a meta row and ~16 KB chunks of their text: a session scores its best
//! row plus a share of the others, and two query words found close together
//! count as a term of their own); only the shown ones look at their
//! messages' rows, for snippets.

use rusqlite::types::Value as SqlValue;

use super::schema::{self, record_columns, COLUMNS, RECORD_COLUMNS, SPAN};
use super::session_scores::{Candidate, Candidates};
use super::snippets::Shown;
use super::vectors::{self, DenseHit, Vectors};
use super::{SessionRecord, Store, StoreError};

/// Start and end of a highlighted match inside [`Snippet::text`].
pub const MARK_START: char = '\u{2}';
pub const MARK_END: char = '\u{3}';
/// Sessions of the current project count this much more.
const CURRENT_PROJECT_BOOST: f64 = 1.5;
/// Ranking rows scored per query, at most, unless one term alone is in more (see `Store::run`).
const MAX_SCORED: i64 = 3_000;
/// Sessions of each ranking that the fused ranking takes (the lexical and
/// the dense top-N).
const FUSED_DEPTH: usize = 50;
/// Reciprocal rank fusion's constant: a session scores `1 / (RRF_K + rank)`
/// in each ranking it is in (the experiment: k = 60, fixed in advance).
const RRF_K: f64 = 60.0;
/// Sessions the dense ranking proposes before the filters.
const DENSE_CANDIDATES: usize = 200;
/// Two words of the query said within this many tokens of each other in a
/// row add their pair's idf to its score (see [`Query::pairs`]).
const NEAR_TOKENS: usize = 5;
/// Words that join the ones a user remembers: never paired.
#[rustfmt::skip]
const FUNCTION_WORDS: &[&str] = &[
    "a", "about", "after", "all", "an", "and", "any", "are", "as", "at", "be", "been", "before", "between", "both",
    "but", "by", "can", "did", "do", "does", "for", "from", "had", "has", "have", "he", "her", "his", "how", "i", "if",
    "in", "into", "is", "it", "its", "just", "me", "my", "no", "not", "of", "on", "or", "our", "she", "so", "than",
    "that", "the", "their", "them", "then", "there", "these", "they", "this", "to", "too", "up", "us", "vs", "was",
    "we", "were", "what", "when", "where", "which", "while", "who", "why", "will", "with", "you", "your",
];

/// Whether `word` (lower-case) only joins the words a user remembers: never
/// paired, never marked in a snippet.
pub(super) fn is_function_word(word: &str) -> bool {
    FUNCTION_WORDS.contains(&word)
}

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
    pub session: SessionRecord,
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
    let tokens: Vec<&str> = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|t| !t.is_empty())
        .collect();
    (!tokens.is_empty()).then(|| format!("\"{}\"", tokens.join(" ")))
}

/// `2w`, `3d`, `12h`, `6m` (months), `1y` ago, or a date (`2026-11-01`, an ISO
/// time), as ms since the epoch; `end_of_day` takes a bare date's last moment.
pub fn parse_since(text: &str, now_ms: u64, end_of_day: bool) -> Result<u64, StoreError> {
    let text = text.trim();
    let bad = || {
        StoreError::BadQuery(format!(
            "{text:?} is not a time (try 2w, 3d, 12h or 2026-11-01)"
        ))
    };
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
    let day = if end_of_day && text.len() == 10 {
        86_400_000 - 1
    } else {
        0
    };
    Ok(ms as u64 + day)
}

impl Query {
    /// Parse the user's text: words, `"phrases"`, `-exclusions`, `file:PATH`, `tag:TAG`.
    pub fn parse(text: &str) -> Result<Query, StoreError> {
        let mut query = Query {
            limit: 10,
            ..Query::default()
        };
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
        let all = query
            .words
            .iter()
            .chain(&query.phrases)
            .chain(&query.exclude)
            .chain(&query.files)
            .chain(&query.tags);
        if all.clone().next().is_some() && all.clone().all(|t| phrase(t).is_none()) {
            return Err(StoreError::BadQuery(format!(
                "{text:?} has no letters or digits to search for"
            )));
        }
        Ok(query)
    }

    /// The terms searched for: the words and the phrases, and a last word
    /// of 3 or 4 letters (one still being typed: `auth`, `sche`) also as a
    /// prefix: the whole word counts twice, so it ranks above longer words
    /// it begins. A longer last word is taken as typed (`chart` never finds
    /// `charter`; the stemmer finds `charts` and `charting`).
    fn terms(&self) -> Vec<String> {
        let mut terms: Vec<String> = self.words.iter().filter_map(|w| phrase(w)).collect();
        let unfinished = |t: &&String| (3..=4).contains(&t.trim_matches('"').chars().count());
        if let Some(last) = terms.last().filter(unfinished) {
            terms.push(format!("{last}*"));
        }
        terms.extend(self.phrases.iter().filter_map(|p| phrase(p)));
        terms
    }

    /// Each two consecutive words of the query (function words skipped), as
    /// quoted terms: a user remembers things said together, and two words
    /// close in a row are evidence that one word alone is not (term
    /// proximity, as in the sequential dependence model).
    fn pairs(&self) -> Vec<(String, String)> {
        let content = self
            .words
            .iter()
            .filter(|w| !is_function_word(&w.to_lowercase()));
        let words: Vec<String> = content.filter_map(|w| phrase(w)).collect();
        words
            .windows(2)
            .filter(|p| p[0] != p[1])
            .map(|p| (p[0].clone(), p[1].clone()))
            .collect()
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
                sql.push_str(&format!(
                    " AND s.sid {cond} (SELECT rowid / {SPAN} FROM docs WHERE docs MATCH ?{})",
                    params.len()
                ));
            }
        }
        let filters = [
            ("s.cwd =", self.project.clone().map(SqlValue::Text)),
            (
                "s.modified_ms >=",
                self.since_ms.map(|ms| SqlValue::Integer(ms as i64)),
            ),
            (
                "s.modified_ms <=",
                self.until_ms.map(|ms| SqlValue::Integer(ms as i64)),
            ),
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

impl Store {
    /// Sessions matching `query`, best first, at most `query.limit`: the
    /// lexical ranking fused with the semantic one when the model is
    /// installed and passages are embedded (see [`fuse`]), else lexical.
    pub fn search(&self, query: &Query) -> Result<Vec<SessionHit>, StoreError> {
        let Some(dense) = self.dense_query(query)? else {
            return self.run(query, None);
        };
        // The query's embedding (~2 ms of CPU at p50 on the search bench)
        // and its nearest passages are made on another thread while this
        // one ranks lexically (the connection stays on this one).
        std::thread::scope(|scope| {
            let dense = scope.spawn(move || dense.ranking());
            self.run(query, Some(dense))
        })
    }

    /// As [`Store::search`], by the lexical ranking alone: its scores are
    /// `bm25()`'s, whose ratios say how far the first session is ahead
    /// (fused scores are reciprocal ranks, which do not).
    pub(super) fn search_lexical(&self, query: &Query) -> Result<Vec<SessionHit>, StoreError> {
        self.run(query, None)
    }

    /// The semantic half of [`Store::search`] alone: the sessions the fused
    /// ranking takes from the dense side, in its order (nearest best
    /// passage first, after the filters and the gate), at most
    /// `query.limit` and [`FUSED_DEPTH`], scored by cosine, without
    /// snippets; empty without the model or vectors. For measuring what each
    /// side brings (`tests/search_eval`) and for a `@@` miss's suggestions
    /// ([`Store::near_in_meaning`]); no surface ranks with it.
    pub fn search_dense(&self, query: &Query) -> Result<Vec<SessionHit>, StoreError> {
        let Some(dense) = self.dense_query(query)? else {
            return Ok(Vec::new());
        };
        let dense = dense.ranking()?;
        let mut hits = self.dense_records(query, &dense).map_err(|e| self.sql(e))?;
        hits.truncate(query.limit);
        Ok(hits.into_iter().map(|(hit, _)| hit).collect())
    }

    /// A query's SQL error, as the user is told it.
    fn query_error(&self, e: rusqlite::Error) -> StoreError {
        match e.sqlite_error_code() {
            // Cannot happen with the expressions built here; said plainly if it does.
            Some(rusqlite::ErrorCode::Unknown) => StoreError::BadQuery(e.to_string()),
            _ => self.sql(e),
        }
    }

    /// Kept in by the gate (stored before `privacy.exclude` named it, or
    /// not in the sessions directory): never shown.
    fn excluded(&self, hit: &SessionHit) -> bool {
        self.gate.check(&hit.session).is_err()
    }

    /// What the dense ranking of `query` needs, or `None`: no model, no
    /// words, or nothing embedded yet.
    fn dense_query(&self, query: &Query) -> Result<Option<DenseQuery>, StoreError> {
        let text: Vec<&str> = query
            .words
            .iter()
            .chain(&query.phrases)
            .map(String::as_str)
            .collect();
        if text.is_empty() || self.model.is_none() {
            return Ok(None);
        }
        // Nothing embedded yet (before the first backfill): no model load,
        // no query embedding.
        let Some(vectors) =
            vectors::embedded(&self.conn, &self.path, self.scored_f32.borrow().clone())
                .map_err(|e| self.sql(e))?
        else {
            return Ok(None);
        };
        let Some(encoder) = self.encoder(1) else {
            return Ok(None);
        };
        Ok(Some(DenseQuery {
            text: text.join(" "),
            encoder,
            vectors,
        }))
    }

    /// The query's phases: count the rows holding each term, choose the
    /// terms that find rows and those that only score, rank (or list the
    /// newest), fuse with the `dense` ranking (made meanwhile on its
    /// thread), then pick the shown sessions' snippets.
    fn run(
        &self,
        query: &Query,
        dense: Option<DenseThread<'_>>,
    ) -> Result<Vec<SessionHit>, StoreError> {
        let sql = |e| self.query_error(e);
        let mut terms = query.terms();
        terms.sort();
        terms.dedup();
        self.counts.borrow_mut().begin(&self.conn).map_err(sql)?;
        let mut counts = self.count_terms(&terms).map_err(sql)?;
        let chosen = Chosen::from(&counts);
        counts.counted.dedup();
        let expr = chosen.expression(&counts.counted);
        let depth = match dense {
            Some(_) => FUSED_DEPTH.max(query.limit),
            None => query.limit,
        };
        let lexical = if expr.is_empty() && !terms.is_empty() {
            Vec::new()
        } else {
            self.lexical(query, &chosen, &counts, expr, depth)
                .map_err(sql)?
        };
        let dense = match dense {
            Some(thread) => Some(joined(thread)?).filter(|hits| !hits.is_empty()),
            None => None,
        };
        let ranked: Vec<(SessionHit, Best)> = match dense {
            Some(dense) => {
                let dense = self.dense_records(query, &dense).map_err(sql)?;
                fuse(lexical, dense, query.limit)
            }
            // No dense hit after all (the vectors were dropped meanwhile):
            // the lexical ranking, as deep as without the model.
            None => lexical
                .into_iter()
                .take(query.limit)
                .map(|(hit, row)| (hit, Best::ranked(row)))
                .collect(),
        };
        let exprs = snippet_expressions(&counts);
        let hits = self.with_snippets(ranked, &exprs).map_err(sql)?;
        self.counts.borrow_mut().end(&self.conn).map_err(sql)?;
        Ok(hits)
    }

    /// The lexical ranking: at most `depth` sessions and their best ranking row.
    fn lexical(
        &self,
        query: &Query,
        chosen: &Chosen<'_>,
        counts: &TermCounts<'_>,
        expr: String,
        depth: usize,
    ) -> rusqlite::Result<Vec<(SessionHit, i64)>> {
        let hits = if chosen.newest {
            self.newest(query, counts, expr, depth)?
        } else {
            self.ranked(query, chosen, counts, expr, depth)?
        };
        Ok(hits
            .into_iter()
            .filter(|(h, _)| !self.excluded(h))
            .collect())
    }

    /// The newest sessions holding every term of `expr` that pass the filters.
    fn newest(
        &self,
        query: &Query,
        counts: &TermCounts<'_>,
        expr: String,
        depth: usize,
    ) -> rusqlite::Result<Vec<(SessionHit, i64)>> {
        let current_cwd = query.current_cwd.clone();
        let mut params = vec![
            SqlValue::Text(expr),
            current_cwd.map_or(SqlValue::Null, SqlValue::Text),
        ];
        let cond = query.conditions(&mut params);
        let sql = newest_sql(holds_all(counts, depth), &cond, depth);
        let mut stmt = self.conn.prepare_cached(&sql)?;
        let hits = stmt.query_map(rusqlite::params_from_iter(params), hit_and_best_row)?;
        hits.collect()
    }

    /// Sessions ranked by their best row (its meta or a chunk of its text)
    /// plus a share of the others: the rows matching `expr` scored by
    /// `bm25()`, the near pairs' rows adding their idf, added up by session
    /// ([`Candidates`]); then the best `depth` of those that pass the
    /// filters, the current project's boosted (see [`Store::best_candidates`]).
    fn ranked(
        &self,
        query: &Query,
        chosen: &Chosen<'_>,
        counts: &TermCounts<'_>,
        expr: String,
        depth: usize,
    ) -> rusqlite::Result<Vec<(SessionHit, i64)>> {
        let mut params = vec![SqlValue::Text(expr)];
        let near = self.near_pairs(query, chosen, counts, &mut params)?;
        let mut stmt = self.conn.prepare_cached(&ranking_rows_sql(&near))?;
        let rows = stmt.query_map(rusqlite::params_from_iter(params), |r| {
            Ok((r.get(0)?, r.get(1)?))
        })?;
        let candidates = Candidates::from_rows(rows)?;
        self.best_candidates(query, &candidates, depth)
    }

    /// The best `depth` of `candidates` that pass the query's filters, the
    /// current project's scores boosted, best first (then the newest), each
    /// with its best row. Only the candidates that can still take a place
    /// are looked up, in rounds, best first: those whose score with the
    /// boost reaches the last place's (for the first round, the `depth`th
    /// candidate's: every place is at least that when no filter leaves one
    /// out), and as many as places are left.
    fn best_candidates(
        &self,
        query: &Query,
        candidates: &Candidates,
        depth: usize,
    ) -> rusqlite::Result<Vec<(SessionHit, i64)>> {
        let boost = match query.current_cwd {
            Some(_) => CURRENT_PROJECT_BOOST,
            None => 1.0,
        };
        let mut places: Vec<(Place, Candidate)> = Vec::new();
        let mut looked = 0;
        while looked < candidates.len() && depth > 0 {
            let left = depth.saturating_sub(places.len());
            let bar = match places.get(depth - 1) {
                Some((place, _)) => place.score,
                None => candidates
                    .nth_score(looked + left)
                    .unwrap_or(f64::NEG_INFINITY),
            };
            let round = candidates.within_reach(looked, left, boost, bar);
            if round.is_empty() {
                break;
            }
            looked += round.len();
            places.extend(self.places(query, round)?);
            // Stable: equal places keep the candidates' order.
            places.sort_by(|a, b| {
                (b.0.score.total_cmp(&a.0.score)).then(b.0.modified_ms.cmp(&a.0.modified_ms))
            });
            places.truncate(depth);
        }
        let sids: Vec<i64> = places.iter().map(|(_, c)| c.sid).collect();
        let mut records = self.records_of(&sids, &Query::default())?;
        let hits = places.into_iter().filter_map(|(place, candidate)| {
            let session = records.remove(&candidate.sid)?;
            let hit = SessionHit {
                session,
                score: place.score,
                snippets: Vec::new(),
            };
            Some((hit, candidate.best))
        });
        Ok(hits.collect())
    }

    /// Those of `candidates` that pass the query's filters, with their score
    /// (the current project's boosted) and time.
    fn places(
        &self,
        query: &Query,
        candidates: &[Candidate],
    ) -> rusqlite::Result<Vec<(Place, Candidate)>> {
        let sids: Vec<i64> = candidates.iter().map(|c| c.sid).collect();
        let mut params = vec![
            sid_list(&sids),
            query
                .current_cwd
                .clone()
                .map_or(SqlValue::Null, SqlValue::Text),
        ];
        let cond = query.conditions(&mut params);
        let sql = format!("{}{cond}", schema::PLACES_OF);
        let mut stmt = self.conn.prepare_cached(&sql)?;
        let mut found: std::collections::HashMap<i64, (bool, i64)> = stmt
            .query_map(rusqlite::params_from_iter(params), |r| {
                Ok((r.get(0)?, (r.get(1)?, r.get(2)?)))
            })?
            .collect::<rusqlite::Result<_>>()?;
        let places = candidates.iter().filter_map(|c| {
            let (current, modified_ms) = found.remove(&c.sid)?;
            let boost = if current { CURRENT_PROJECT_BOOST } else { 1.0 };
            let place = Place {
                score: c.score * boost,
                modified_ms,
            };
            Some((place, *c))
        });
        Ok(places.collect())
    }

    /// The records of the sessions `sids` that pass the query's filters, by sid.
    fn records_of(
        &self,
        sids: &[i64],
        query: &Query,
    ) -> rusqlite::Result<std::collections::HashMap<i64, SessionRecord>> {
        let mut params = vec![sid_list(sids)];
        let cond = query.conditions(&mut params);
        let sql = format!("{}{cond}", schema::RECORDS_OF);
        let mut stmt = self.conn.prepare_cached(&sql)?;
        let found = stmt.query_map(rusqlite::params_from_iter(params), |r| {
            Ok((r.get(RECORD_COLUMNS)?, SessionRecord::from_row(r)?))
        })?;
        found.collect()
    }

    /// The records of the `dense` sessions that pass the query's filters and
    /// the gate, in the dense order, at most [`FUSED_DEPTH`], each with its
    /// best passage's row.
    fn dense_records(
        &self,
        query: &Query,
        dense: &[DenseHit],
    ) -> rusqlite::Result<Vec<(SessionHit, i64)>> {
        let sids: Vec<i64> = dense.iter().map(|d| d.sid).collect();
        let mut found = self.records_of(&sids, query)?;
        let mut hits = Vec::new();
        for d in dense {
            let Some(session) = found.remove(&d.sid) else {
                continue;
            };
            let hit = SessionHit {
                session,
                score: f64::from(d.score),
                snippets: Vec::new(),
            };
            if !self.excluded(&hit) {
                hits.push((hit, d.row));
            }
            if hits.len() == FUSED_DEPTH {
                break;
            }
        }
        Ok(hits)
    }

    /// The hits with their snippets: from each one's best ranking row (that
    /// of its best passage when only the dense ranking found it); when the
    /// query's words are in none, the beginning of its best passage.
    fn with_snippets(
        &self,
        ranked: Vec<(SessionHit, Best)>,
        exprs: &[String],
    ) -> rusqlite::Result<Vec<SessionHit>> {
        let mut chunks = Vec::with_capacity(ranked.len());
        for (_, best) in &ranked {
            chunks.push(match (best.ranked, best.passage) {
                (Some(row), _) => Some(row),
                (None, Some(passage)) => self.ranking_row_of(passage)?,
                (None, None) => None,
            });
        }
        let shown: Vec<Shown<'_>> = ranked
            .iter()
            .zip(&chunks)
            .filter_map(|((hit, _), chunk)| {
                Some(Shown {
                    path: &hit.session.path,
                    chunk: (*chunk)?,
                })
            })
            .collect();
        let mut cut = if exprs.is_empty() || shown.is_empty() {
            Vec::new()
        } else {
            self.snippets(&shown, exprs)?
        }
        .into_iter();
        let mut hits = Vec::with_capacity(ranked.len());
        for ((hit, best), chunk) in ranked.into_iter().zip(chunks) {
            let mut snippets = match chunk {
                Some(_) => cut.next().unwrap_or_default(),
                None => Vec::new(),
            };
            if let (true, Some(passage)) = (snippets.is_empty(), best.passage) {
                snippets.extend(self.passage_snippet(&hit.session.path, passage)?);
            }
            hits.push(SessionHit { snippets, ..hit });
        }
        Ok(hits)
    }

    /// How many ranking rows hold each term (at most `common + 1` are
    /// counted; kept from the last queries, see `kept_counts.rs`). The prefix
    /// of a common word is common too (not counted). That of a found word of
    /// 5 letters or more (no prefix index) costs a merge of every longer
    /// word's rows: the word counts twice instead.
    fn count_terms<'t>(&self, terms: &'t [String]) -> rusqlite::Result<TermCounts<'t>> {
        let mut kept = self.counts.borrow_mut();
        let rows = kept.rows(&self.conn)?;
        // A quarter of the rows, but never fewer than MAX_SCORED (small stores) or more than half.
        let common = (rows / 4).max(MAX_SCORED).min(rows / 2);
        let mut counted: Vec<(i64, &str)> = Vec::new();
        for term in terms {
            let whole = term
                .strip_suffix('*')
                .and_then(|w| counted.iter().find(|c| c.1 == w))
                .copied();
            if let Some((n, w)) = whole.filter(|&(n, w)| n > common || w.chars().count() >= 7) {
                counted.extend((n <= common).then_some((n, w)));
                continue;
            }
            let n = kept.matches(&self.conn, term, common + 1)?;
            if n > 0 {
                counted.push((n, term.as_str()));
            }
        }
        counted.sort();
        Ok(TermCounts {
            rows,
            common,
            counted,
        })
    }

    /// Pairs said together: rows holding one add the pair's idf (as bm25()
    /// weighs a term) to their score, as `UNION ALL` arms of the ranked
    /// query, their expressions appended to `params`. Only pairs of rare
    /// words: finding a common word's pairs costs reading its many rows.
    fn near_pairs(
        &self,
        query: &Query,
        chosen: &Chosen<'_>,
        counts: &TermCounts<'_>,
        params: &mut Vec<SqlValue>,
    ) -> rusqlite::Result<String> {
        let (rows, common) = (counts.rows, counts.common);
        let mut kept = self.counts.borrow_mut();
        let mut near = String::new();
        let is_rare = |w: &String| chosen.rare.contains(&w.as_str());
        let rare_pairs = query
            .pairs()
            .into_iter()
            .filter(|(a, b)| is_rare(a) && is_rare(b));
        for pair in rare_pairs.map(|(a, b)| format!("NEAR({a} {b}, {NEAR_TOKENS})")) {
            let n = kept.matches(&self.conn, &pair, common + 1)?;
            if (1..=common).contains(&n) {
                let idf = (((rows - n) as f64 + 0.5) / (n as f64 + 0.5))
                    .ln()
                    .max(1e-6);
                params.push(SqlValue::Text(pair));
                near.push_str(&format!(
                    " UNION ALL SELECT rowid, {idf} FROM docs WHERE docs MATCH ?{}",
                    params.len()
                ));
            }
        }
        Ok(near)
    }
}

/// What the dense ranking of a query needs: its words, the encoder and the
/// store's vectors, all of which may go to another thread.
struct DenseQuery {
    text: String,
    encoder: std::sync::Arc<sentence_embed::Encoder>,
    vectors: Vectors,
}

impl DenseQuery {
    /// The sessions nearest to the query's words by their best embedded
    /// passage (before the filters), best first.
    fn ranking(self) -> Result<Vec<DenseHit>, StoreError> {
        let embedded = self
            .encoder
            .embed_query(&self.text)
            .map_err(|e| StoreError::Embed(e.to_string()))?;
        Ok(self.vectors.nearest_sessions(&embedded, DENSE_CANDIDATES))
    }
}

/// [`DenseQuery::ranking`] on its thread, while the lexical ranking runs.
type DenseThread<'scope> = std::thread::ScopedJoinHandle<'scope, Result<Vec<DenseHit>, StoreError>>;

/// The dense ranking made on `thread`; a panic there goes on here, as if
/// it had been made on this thread.
fn joined(thread: DenseThread<'_>) -> Result<Vec<DenseHit>, StoreError> {
    thread
        .join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

/// How many ranking rows hold each term of a query.
struct TermCounts<'t> {
    /// Ranking rows in the store.
    rows: i64,
    /// A term in more rows than this does not rank (its idf is too small to
    /// tell sessions apart, and bm25() costs per row matched).
    common: i64,
    /// `(rows holding it, term)`, fewest first; a whole word whose prefix
    /// is also searched counts twice.
    counted: Vec<(i64, &'t str)>,
}

/// Which terms find the rows to rank and which only add to their score.
/// Rows are found by the rare terms, rarest first, each in at most an eighth
/// of the rows and together in at most [`MAX_SCORED`] (at least the rarest);
/// the other rare terms only add to their score. A query with no rare term,
/// or whose rarest is in more rows than both bounds, lists the newest
/// sessions holding all its terms instead.
struct Chosen<'t> {
    /// The terms in at most `common` rows (none when listing the newest).
    rare: Vec<&'t str>,
    /// How many of `rare` (the first) find the rows.
    anchors: usize,
    /// List the newest sessions holding every term instead of ranking.
    newest: bool,
}

impl<'t> Chosen<'t> {
    fn from(counts: &TermCounts<'t>) -> Chosen<'t> {
        let (rows, common, counted) = (counts.rows, counts.common, &counts.counted);
        let rare: Vec<&str> = counted
            .iter()
            .filter(|(n, _)| *n <= common)
            .map(|t| t.1)
            .collect();
        let within = |k: usize| {
            counted[k].0 <= rows / 8 && counted[..=k].iter().map(|t| t.0).sum::<i64>() <= MAX_SCORED
        };
        let anchors = (0..counted.len())
            .take_while(|&k| within(k))
            .count()
            .max(1)
            .min(rare.len());
        let newest = anchors == 0 || counted[0].0 > (rows / 8).max(MAX_SCORED);
        Chosen {
            rare: if newest { Vec::new() } else { rare },
            anchors,
            newest,
        }
    }

    /// The `MATCH` expression: every term, when listing the newest; else the
    /// anchors, and the other rare terms as optional.
    fn expression(&self, counted: &[(i64, &str)]) -> String {
        if self.newest {
            let all: Vec<&str> = counted.iter().map(|t| t.1).collect();
            return all.join(" AND ");
        }
        let anchors = self.rare[..self.anchors].join(" OR ");
        let others = self.rare[self.anchors..].join(" OR ");
        if others.is_empty() {
            anchors
        } else {
            format!("({anchors}) AND ({anchors} OR {others})")
        }
    }
}

/// A session holds every term: when most sessions are likely to (by the
/// terms' shares of the rows), walked newest first (an index) and each
/// looked up by its rowids, else their ids collected first (a cost that
/// grows with the rows).
fn holds_all(counts: &TermCounts<'_>, limit: usize) -> String {
    let rows = counts.rows as f64;
    let share: f64 = counts.counted.iter().map(|t| t.0 as f64 / rows).product();
    if share * 200.0 >= limit as f64 {
        format!(
            "EXISTS (SELECT 1 FROM docs WHERE docs MATCH ?1 \
             AND rowid BETWEEN s.sid * {SPAN} AND s.sid * {SPAN} + {SPAN} - 1)"
        )
    } else {
        format!("s.sid IN (SELECT rowid / {SPAN} FROM docs WHERE docs MATCH ?1)")
    }
}

/// The newest sessions that pass the filters (`cond`) and hold every term
/// (`holds`; any session for a query of filters only).
fn newest_sql(holds: String, cond: &str, limit: usize) -> String {
    format!(
        "WITH hit AS (
           SELECT sid FROM sessions s WHERE (?1 = '' OR {holds}) AND ?2 IS ?2 {cond}
           ORDER BY s.modified_ms DESC LIMIT {limit})
         SELECT {}, 0.0, s.sid * {SPAN}
         FROM hit JOIN sessions s USING (sid) ORDER BY s.modified_ms DESC",
        record_columns!()
    )
}

/// The ranking rows matching ?1, scored by `bm25()` with the `near` pairs'
/// rows added (each row once), in rowid order.
fn ranking_rows_sql(near: &str) -> String {
    let weights: Vec<String> = COLUMNS.iter().map(|(_, w)| w.to_string()).collect();
    let rank = format!("-bm25(docs, {})", weights.join(", "));
    if near.is_empty() {
        return format!("SELECT rowid, {rank} FROM docs WHERE docs MATCH ?1 ORDER BY rowid");
    }
    format!(
        "WITH ranked AS MATERIALIZED (SELECT rowid, {rank} AS r FROM docs WHERE docs MATCH ?1)
         SELECT rowid, sum(r) FROM (SELECT rowid, r FROM ranked{near}) GROUP BY rowid ORDER BY rowid"
    )
}

/// The snippets' expressions: holding every word ranked on, then any, then
/// the prefix. A common word costs the most to look up and tells the least:
/// with no rare term, only the least common is looked up.
fn snippet_expressions(counts: &TermCounts<'_>) -> Vec<String> {
    let looked: Vec<&str> = counts
        .counted
        .iter()
        .enumerate()
        .take_while(|(i, t)| *i == 0 || t.0 <= counts.common)
        .map(|t| t.1 .1)
        .collect();
    let words: Vec<&str> = looked
        .iter()
        .copied()
        .filter(|t| !t.ends_with('*'))
        .collect();
    let mut exprs = vec![words.join(" AND "), words.join(" OR "), looked.join(" OR ")];
    exprs.retain(|e| !e.is_empty());
    exprs.dedup();
    exprs
}

/// Session ids as the JSON array that `json_each` reads (`RECORDS_OF`, `PLACES_OF`).
fn sid_list(sids: &[i64]) -> SqlValue {
    SqlValue::Text(serde_json::to_string(sids).unwrap_or_else(|_| "[]".into()))
}

/// A record followed by its score, then the rowid of its best ranking row.
fn hit_and_best_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<(SessionHit, i64)> {
    let hit = SessionHit {
        session: SessionRecord::from_row(r)?,
        score: r.get(RECORD_COLUMNS)?,
        snippets: Vec::new(),
    };
    Ok((hit, r.get(RECORD_COLUMNS + 1)?))
}

/// A ranked session's place: its score (the current project's boosted) and
/// its time (the newer first on a tie).
#[derive(Debug, Clone, Copy)]
struct Place {
    score: f64,
    modified_ms: i64,
}

/// Where a shown session's snippets come from: its best ranking row (when
/// the lexical ranking found it) and its best passage (when the dense one did).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Best {
    ranked: Option<i64>,
    passage: Option<i64>,
}

impl Best {
    fn ranked(row: i64) -> Best {
        Best {
            ranked: Some(row),
            passage: None,
        }
    }
}

/// Reciprocal rank fusion of the `lexical` and `dense` rankings (each best
/// first): a session scores the sum of `1 / (RRF_K + rank)` over the
/// rankings it is in; ties keep the lexical order. At most `limit`.
fn fuse(
    lexical: Vec<(SessionHit, i64)>,
    dense: Vec<(SessionHit, i64)>,
    limit: usize,
) -> Vec<(SessionHit, Best)> {
    let rrf = |rank: usize| 1.0 / (RRF_K + rank as f64 + 1.0);
    let mut fused: Vec<(SessionHit, Best)> = lexical
        .into_iter()
        .enumerate()
        .map(|(rank, (hit, row))| {
            let score = rrf(rank);
            (SessionHit { score, ..hit }, Best::ranked(row))
        })
        .collect();
    for (rank, (hit, passage)) in dense.into_iter().enumerate() {
        let same = fused
            .iter_mut()
            .find(|(f, _)| f.session.path == hit.session.path);
        match same {
            Some((f, best)) => {
                f.score += rrf(rank);
                best.passage = Some(passage);
            }
            None => fused.push((
                SessionHit {
                    score: rrf(rank),
                    ..hit
                },
                Best {
                    ranked: None,
                    passage: Some(passage),
                },
            )),
        }
    }
    // Stable: equal scores keep the lexical order, then the dense one.
    fused.sort_by(|a, b| b.0.score.total_cmp(&a.0.score));
    fused.truncate(limit);
    fused
}
