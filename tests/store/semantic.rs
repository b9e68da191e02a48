//! Semantic ranking in the store: the rows to embed are written with the
//! text (pending), dropped with their session, embedded by the job, and a
//! query that shares no word with its session finds it through the fused
//! ranking — with the real model (from the PyPI wheel, as `.ci/run` fetches
//! it), and without it the search stays lexical.

use std::path::{Path, PathBuf};

use crate::support::model::model_dir;
use crate::support::search::{hit_ids, store_updated, top5, write_meta, Writer};
use serde_json::json;
use session_index::store::{EmbedStatus, Query};

/// Sessions on unrelated subjects; the one about 429s never says "throttled".
fn sessions(agent: &Path) {
    let mut retry = Writer::new(agent, "/p/api", "retries");
    retry.user(
        "The provider keeps answering 429 Too Many Requests when the agent sends many \
         requests in a row. Make the client wait and try again instead of failing.",
    );
    retry.tool("bash", json!({"command": "cargo test"}), "test result: ok");
    retry.assistant(
        "I added a retry loop with exponential backoff: after a 429 the client waits \
         1 s, 2 s, 4 s (honouring Retry-After) before sending the request again.",
    );
    let subjects = [
        (
            "css",
            "Center the login form vertically with flexbox on small screens.",
        ),
        (
            "rebase",
            "Rebase my feature branch onto main and resolve the conflict in lib.rs.",
        ),
        (
            "wal",
            "Why does SQLite's WAL file keep growing while readers stay open?",
        ),
        (
            "docs",
            "Write a README section that explains how to install the plugin.",
        ),
    ];
    for (id, text) in subjects {
        let mut w = Writer::new(agent, "/p/misc", id);
        w.user(text);
        w.assistant("Done: the change is in place and the tests pass.");
    }
}

/// The rows to embed as counted in the store's file: what `embed_status`
/// (kept by the writes in the `counters` table) must say.
fn counted(agent: &Path) -> EmbedStatus {
    let conn =
        rusqlite::Connection::open(session_index::store::store_path(agent)).expect("open the file");
    let count = |sql: &str| conn.query_row(sql, [], |r| r.get::<_, u64>(0)).expect(sql);
    EmbedStatus {
        embedded: count("SELECT count(*) FROM embeddings WHERE vectors IS NOT NULL"),
        pending: count("SELECT count(*) FROM embeddings WHERE vectors IS NULL"),
    }
}

#[test]
fn rows_to_embed_are_written_with_the_text_and_dropped_with_the_session() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let agent = dir.path();
    let mut w = Writer::new(agent, "/p/a", "one");
    w.user("plan the storage layer for the sync service");
    w.tool(
        "bash",
        json!({"command": "ls"}),
        "tool output is never embedded",
    );
    w.assistant("Two tables: one per device, one per change.");
    let index = store_updated(agent, None);
    // The user turn and the assistant turn; not the tool result, no meta yet.
    assert_eq!(
        index.embed_status().expect("status"),
        EmbedStatus {
            embedded: 0,
            pending: 2
        }
    );
    drop(index);

    // An append adds its own row; a meta adds the meta row.
    w.user("and a third table for conflicts");
    write_meta(
        agent,
        &w,
        "Sync storage",
        "Tables for the sync service.",
        &["sync"],
    );
    let index = store_updated(agent, None);
    assert_eq!(index.embed_status().expect("status").pending, 4);
    drop(index);

    // Another meta: its row is replaced, the count stays.
    write_meta(agent, &w, "Sync storage", "Three tables now.", &["sync"]);
    let index = store_updated(agent, None);
    assert_eq!(index.embed_status().expect("status"), counted(agent));
    assert_eq!(index.embed_status().expect("status").pending, 4);
    drop(index);

    // A store of this schema made before the counts were kept counts its rows once.
    {
        let conn = rusqlite::Connection::open(session_index::store::store_path(agent))
            .expect("open the file");
        conn.execute(
            "DELETE FROM counters WHERE name IN ('pending', 'embedded')",
            [],
        )
        .expect("age it");
    }
    let index = store_updated(agent, None);
    assert_eq!(index.embed_status().expect("status").pending, 4);
    drop(index);

    std::fs::remove_file(&w.path).expect("delete the session");
    let index = store_updated(agent, None);
    assert_eq!(
        index.embed_status().expect("status"),
        EmbedStatus::default()
    );
}

#[test]
fn without_the_model_search_stays_lexical() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let agent = dir.path();
    sessions(agent);
    // The model directory named but not installed there.
    let index = store_updated(agent, Some(&agent.join("no-model")));
    assert!(index.encoder(1).is_none());
    assert!(index.background_encoder().is_none());
    assert!(top5(&index, "getting throttled").is_empty());
    assert_eq!(
        hit_ids(&top5(&index, "exponential backoff")),
        vec!["retries"]
    );
}

#[test]
fn a_paraphrase_finds_its_session_once_passages_are_embedded() {
    let Some(model) = model_dir() else { return };
    let dir = tempfile::tempdir().expect("a temporary directory");
    let agent = dir.path();
    sessions(agent);
    let mut index = store_updated(agent, Some(model));
    let query = "how the client copes with rate limiting by the API";
    // Nothing embedded yet: the query ranks with what there is, at once.
    let pending = index.embed_status().expect("status").pending;
    assert_eq!(pending, 10, "two turns of each of the five sessions");
    assert!(top5(&index, "getting throttled").is_empty());

    let encoder = index.encoder(1).expect("the model loads");
    let mut batches = 0;
    let report = index
        .embed_pending(&encoder, None, &mut |_| batches += 1)
        .expect("embed");
    assert!(batches >= 1);
    assert_eq!(report.rows, 10);
    assert_eq!(report.pending, 0);
    assert_eq!(
        report.passages, 10,
        "{report:?}: one passage per short turn"
    );
    assert_eq!(
        index.embed_status().expect("status"),
        EmbedStatus {
            embedded: 10,
            pending: 0
        }
    );
    assert_eq!(index.embed_status().expect("status"), counted(agent));

    let hits = top5(&index, "getting throttled");
    assert_eq!(
        hit_ids(&hits).first(),
        Some(&"retries".to_string()),
        "no word of the query is in the session: only the dense ranking finds it"
    );
    assert!(
        !hits[0].snippets.is_empty(),
        "a passage stands for the match"
    );
    let hits = top5(&index, query);
    assert_eq!(hit_ids(&hits).first(), Some(&"retries".to_string()));
    // The lexical ranking still decides an exact word.
    assert_eq!(
        hit_ids(&top5(&index, "flexbox")).first(),
        Some(&"css".to_string())
    );

    // A deleted session's vectors never rank again, in this process either.
    let retries = agent.join("sessions");
    let path = walk(&retries)
        .into_iter()
        .find(|p| p.to_string_lossy().contains("retries"));
    std::fs::remove_file(path.expect("the retries session")).expect("delete it");
    let index = store_updated(agent, Some(model));
    assert_eq!(index.embed_status().expect("status"), counted(agent));
    assert_eq!(index.embed_status().expect("status").embedded, 8);
    assert!(!hit_ids(&top5(&index, "getting throttled")).contains(&"retries".to_string()));
}

/// A long answer's last paragraph is embedded too: a long turn is split
/// into passages, all of them, not cut after its first two (what the store
/// did before; the dense ranking then never saw what a user remembers from
/// deep inside an answer).
#[test]
fn a_detail_at_the_end_of_a_long_answer_is_found_by_meaning() {
    let Some(model) = model_dir() else { return };
    let dir = tempfile::tempdir().expect("a temporary directory");
    let agent = dir.path();
    sessions(agent);
    let mut long = Writer::new(agent, "/p/ops", "long-answer");
    long.user("Tidy up the settings page layout.");
    let layout = "The settings page now uses a flexbox column; the header stays fixed \
                  while the list of options scrolls underneath it. "
        .repeat(40);
    long.assistant(&format!(
        "{layout}\n\nOne more thing: the nightly backup job now compresses the database \
         dump with zstd before uploading it to the S3 bucket."
    ));
    let mut index = store_updated(agent, Some(model));
    let encoder = index.encoder(1).expect("the model loads");
    let report = index
        .embed_pending(&encoder, None, &mut |_| {})
        .expect("embed");
    assert!(
        report.passages >= 16,
        "{report:?}: the long answer is ~800 word pieces, 7 passages or more"
    );
    let query = Query {
        limit: 3,
        ..Query::parse("nightly backup compressed with zstd before the upload to S3")
            .expect("a valid query")
    };
    let dense = index.search_dense(&query).expect("search");
    assert_eq!(
        hit_ids(&dense).first().map(String::as_str),
        Some("long-answer"),
        "the answer's last passage is embedded"
    );
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).expect("read a directory") {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

/// The backfill never holds a query up: it embeds on an encoder of its own
/// (the same weights, another pool) at the lowest CPU priority, and gives the
/// query's encoder the same vectors.
#[test]
fn the_backfill_embeds_on_its_own_low_priority_pool() {
    let Some(model) = model_dir() else { return };
    let dir = tempfile::tempdir().expect("a temporary directory");
    let index = store_updated(dir.path(), Some(model));
    let query = index.encoder(1).expect("the model is installed");
    let background = index.background_encoder().expect("the model is installed");
    assert!(!std::sync::Arc::ptr_eq(&query, &background));
    assert!(std::sync::Arc::ptr_eq(
        &background,
        &index.background_encoder().expect("loaded once")
    ));
    let text = "the client waits and retries after a 429";
    let cosine = query
        .embed_query(text)
        .expect("embeds")
        .cosine(&background.embed_query(text).expect("embeds"));
    assert!(cosine > 0.99999, "{cosine}");
    if cfg!(target_os = "linux") {
        assert_eq!(background.pool_priority(), 19);
        assert!(query.pool_priority() < 19);
    }
}

/// The `@@` surface: a reference that no id, name, slug, fuzzy name or
/// phrase search resolves offers the sessions nearest to its words in
/// meaning (what pi's picker then shows: "Did you mean one of these?") —
/// never resolved on meaning alone, nothing offered for words far from
/// every session, and nothing by meaning with `search.semantic` off.
#[test]
fn a_reference_that_names_nothing_offers_the_sessions_it_may_mean() {
    use session_index::resolve::{Catalog, ResolveError};
    let Some(model) = model_dir() else { return };
    let dir = tempfile::tempdir().expect("a temporary directory");
    let agent = dir.path();
    sessions(agent);
    let mut index = store_updated(agent, Some(model));
    let encoder = index.encoder(1).expect("the model loads");
    index
        .embed_pending(&encoder, None, &mut |_| {})
        .expect("embed");
    // Where the catalog's store looks for the model: the agent directory's.
    let installed = session_index::store::model_dir(agent);
    std::fs::create_dir_all(installed.parent().expect("models dir")).expect("models dir");
    std::os::unix::fs::symlink(model, &installed).expect("link the model");

    let (sessions, metas) = (agent.join("sessions"), agent.join("sessions-meta"));
    let suggested = |catalog: &Catalog, reference: &str| -> Vec<String> {
        match catalog.resolve(&sessions, &metas, "/p/misc", reference) {
            Err(ResolveError::NotFound { suggestions, .. }) => {
                suggestions.into_iter().map(|c| c.id).collect()
            }
            other => panic!("{reference}: a miss expected, got {other:?}"),
        }
    };
    let semantic = Catalog::new().with_search(true).with_semantic(true);
    let offered = suggested(&semantic, "getting-throttled-by-the-api");
    assert_eq!(
        offered.first().map(String::as_str),
        Some("retries"),
        "{offered:?}: no word of the reference is in the session; its meaning is"
    );
    assert!(
        suggested(&semantic, "zqx-vorpal-snark").is_empty(),
        "words near no session's meaning offer nothing"
    );
    let lexical = Catalog::new().with_search(true);
    assert!(
        !suggested(&lexical, "getting-throttled-by-the-api").contains(&"retries".to_string()),
        "search.semantic off: nothing by meaning"
    );
}
