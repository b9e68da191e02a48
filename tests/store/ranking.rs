//! The lexical ranking's sessions and scores, against the SQL statement that
//! ranked them before the ranking rows were added up in Rust
//! (`src/store/session_scores.rs`): the same sessions in the same order with
//! the same scores, to the bit, with the current project's boost and with
//! filters that leave out the best candidates.

use std::path::Path;

use crate::support::search::{store_updated, Writer};
use session_index::store::{Query, SessionHit, Store};

const PROJECTS: [&str; 5] = ["/p/a", "/p/b", "/p/c", "/p/d", "/p/e"];

/// 150 sessions, a third of them saying "quillwort" (in every project, a
/// different number of times and among a different number of other words),
/// some long enough for several ranking rows.
fn sessions(agent: &Path) {
    for i in 0..150usize {
        let mut w = Writer::new(agent, PROJECTS[i % 5], &format!("s{i:03}"));
        let says = i % 2 == 0 && i % 3 != 0;
        let filler = |n: usize| format!("filler{i} other{} ", n % 13).repeat(1 + n % 9);
        w.user(&format!(
            "{} {}",
            filler(i),
            if says {
                "quillwort ".repeat(1 + i % 7)
            } else {
                String::new()
            }
        ));
        w.assistant(&filler(i * 7));
        if i % 5 == 1 {
            // ~60 KB more: a session of several ranking rows, the word in some.
            for k in 0..6 {
                let word = if says && k % 2 == 1 {
                    "quillwort"
                } else {
                    "bulk"
                };
                w.assistant(&format!(
                    "{} {word}",
                    "plain words of a long answer ".repeat(350)
                ));
            }
        }
    }
}

/// The statement the ranking was made by (`rank.rs`'s `ranked_sql` before
/// `session_scores.rs`), for a one-word query (no near pairs), with the
/// filters `cond` (parameters from ?3).
fn reference_sql(cond: &str, limit: usize) -> String {
    format!(
        "WITH ranked AS MATERIALIZED (SELECT rowid, -bm25(docs, 10.0, 8.0, 5.0, 5.0, 3.0, 3.0, 1.5, 1.0, 0.5) AS r
           FROM docs WHERE docs MATCH ?1),
         rows AS (SELECT rowid, sum(r) AS r FROM (SELECT rowid, r FROM ranked) GROUP BY rowid),
         per AS (SELECT rowid / 1048576 AS sid, rowid AS best, max(r) AS top, sum(r) AS total
                 FROM rows GROUP BY 1),
         hit AS (SELECT s.sid, best, s.modified_ms AS m,
                   (top + 0.5 * (total - top)) * IIF(s.cwd = ?2, 1.5, 1.0) AS score
                 FROM per JOIN sessions s INDEXED BY sessions_rank ON s.sid = per.sid
                 WHERE 1 {cond} ORDER BY score DESC, m DESC LIMIT {limit})
         SELECT s.id, score FROM hit JOIN sessions s USING (sid) ORDER BY score DESC, m DESC"
    )
}

fn ids_and_scores(hits: &[SessionHit]) -> Vec<(String, u64)> {
    hits.iter()
        .map(|h| (h.session.id.clone(), h.score.to_bits()))
        .collect()
}

#[test]
fn the_ranking_is_the_sql_aggregates_to_the_bit() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let agent = dir.path();
    sessions(agent);
    let index: Store = store_updated(agent, None);
    let conn = rusqlite::Connection::open(session_index::store::store_path(agent))
        .expect("open the store file");
    let reference = |current: Option<&str>, project: Option<&str>, limit: usize| {
        let (cond, extra) = match project {
            Some(p) => (" AND s.cwd = ?3", vec![p.to_string()]),
            None => ("", vec![]),
        };
        let mut stmt = conn
            .prepare(&reference_sql(cond, limit))
            .expect("the reference statement");
        let mut params: Vec<rusqlite::types::Value> = vec![
            "\"quillwort\"".to_string().into(),
            current.map(str::to_string).into(),
        ];
        params.extend(extra.into_iter().map(Into::into));
        stmt.query_map(rusqlite::params_from_iter(params), |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, f64>(1)?.to_bits()))
        })
        .expect("run the reference")
        .collect::<rusqlite::Result<Vec<_>>>()
        .expect("reference rows")
    };
    let mut checked = 0;
    for limit in [1, 3, 10, 50, 200] {
        for current in [None, Some("/p/b"), Some("/p/e"), Some("/p/none")] {
            for project in [None, Some("/p/c"), Some("/p/e")] {
                let query = Query {
                    limit,
                    current_cwd: current.map(Into::into),
                    project: project.map(Into::into),
                    ..Query::parse("quillwort").expect("a valid query")
                };
                let ours = ids_and_scores(&index.search(&query).expect("search"));
                let theirs = reference(current, project, limit);
                assert_eq!(
                    ours, theirs,
                    "limit {limit}, current project {current:?}, project {project:?}"
                );
                assert!(!ours.is_empty());
                checked += ours.len();
            }
        }
    }
    // 50 sessions say it, 10 in each project; some in several rows.
    assert_eq!(checked, 4 * (114 + 2 * 34));
    let rows: i64 = conn
        .query_row(
            "SELECT count(*) FROM docs WHERE docs MATCH 'quillwort'",
            [],
            |r| r.get(0),
        )
        .expect("count the rows");
    assert!(rows > 60, "{rows} rows");
}
