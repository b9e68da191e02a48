//! The search index on real SQLite files: ranking of planted facts among real
//! sessions, query syntax and filters, incremental updates (append,
//! truncation, rewrite, deletion, meta change, branch change), rebuilds and
//! redaction.

use std::path::Path;

use crate::support::search::{
    copy_real_sessions, hit_ids, store_updated, top5, write_meta, Writer,
};
use serde_json::json;
use session_index::store::{Query, Store, UpdateReport};
use session_index::text::Keep;

/// Sessions with one fact each, among the shared real sessions.
fn planted(agent: &Path) {
    assert!(
        copy_real_sessions(agent) >= 10,
        "the shared fixtures hold real sessions"
    );
    let mut tool = Writer::new(agent, "/p/alpha", "tool-fact");
    tool.user("why does the build fail on the runner?");
    tool.tool(
        "bash",
        json!({"command": "cargo build"}),
        "error: linker `cc` not found: the zephyrine toolchain is missing",
    );
    tool.assistant("The linker is missing; install it.");

    let mut branch = Writer::new(agent, "/p/alpha", "abandoned-fact");
    let root = branch.user("let us plan the database work");
    branch.assistant("sure, two options");
    branch.user("go with the marmoset sharding plan");
    branch.assistant("ok, marmoset sharding it is");
    // The user went back and took the other way: the marmoset entries are abandoned.
    branch.user_after(Some(&root), "actually keep a single node");
    branch.assistant("single node then");

    let mut meta = Writer::new(agent, "/p/beta", "meta-fact");
    meta.user("tidy the persistence layer");
    meta.assistant("done");
    write_meta(
        agent,
        &meta,
        "Persistence cleanup",
        "We chose the quokkadb engine for persistence.",
        &["storage", "cleanup"],
    );

    let mut phrase = Writer::new(agent, "/p/beta", "phrase-fact");
    phrase.user("the error said purple elephant dance when the cache was cold");
    let mut apart = Writer::new(agent, "/p/beta", "phrase-apart");
    apart.user("a purple car, an elephant, and a dance class");

    // The same words, said together in one and apart (and in fewer words) in the other.
    Writer::new(agent, "/p/beta", "words-together")
        .user("the quasar flaky deploy one two three four five six seven");
    Writer::new(agent, "/p/beta", "words-apart")
        .user("the quasar deploy one two three four five six flaky");

    let mut file = Writer::new(agent, "/p/gamma", "file-fact");
    file.user("look at the path finder");
    file.tool(
        "read",
        json!({"path": "src/weird/path_finder.rs"}),
        "fn find() {}",
    );
}

#[test]
fn planted_facts_rank_first() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let agent = dir.path();
    planted(agent);
    let index = store_updated(agent, None);

    let hits = top5(&index, "zephyrine toolchain");
    assert_eq!(
        hit_ids(&hits).first(),
        Some(&"tool-fact".to_string()),
        "a fact only in a tool result"
    );
    assert_eq!(hits[0].snippets[0].role, "toolResult");
    assert!(
        hits[0].snippets[0].text.contains('\u{2}'),
        "matches are marked: {:?}",
        hits[0].snippets[0].text
    );

    let hits = top5(&index, "marmoset sharding");
    assert_eq!(
        hit_ids(&hits).first(),
        Some(&"abandoned-fact".to_string()),
        "a fact only on an abandoned branch"
    );
    assert!(
        hits[0].snippets.iter().all(|s| s.abandoned),
        "abandoned entries are marked: {:?}",
        hits[0].snippets
    );
    assert!(hits[0].snippets[0].entry_id.is_some());

    let hits = top5(&index, "quokkadb");
    assert_eq!(
        hit_ids(&hits),
        vec!["meta-fact"],
        "a fact only in the meta summary"
    );
    assert_eq!(hits[0].snippets[0].role, "meta");
    assert_eq!(hits[0].session.name.as_deref(), Some("Persistence cleanup"));
    assert_eq!(hits[0].session.tags, vec!["storage", "cleanup"]);

    // The phrase finds only the session where the words are together; the words alone find both.
    assert_eq!(
        hit_ids(&top5(&index, "\"purple elephant dance\"")),
        vec!["phrase-fact"]
    );
    let mut both = hit_ids(&top5(&index, "purple elephant dance"));
    both.sort();
    assert_eq!(both, vec!["phrase-apart", "phrase-fact"]);
    assert_eq!(
        hit_ids(&top5(&index, "purple elephant -car")),
        vec!["phrase-fact"],
        "exclusion"
    );
    // Words said together rank above the same words apart, though bm25() alone prefers the shorter row.
    assert_eq!(
        hit_ids(&top5(&index, "flaky quasar")),
        vec!["words-together", "words-apart"],
        "proximity"
    );

    assert_eq!(
        hit_ids(&top5(&index, "file:src/weird/path_finder.rs")),
        vec!["file-fact"]
    );
    assert_eq!(hit_ids(&top5(&index, "path_finder")), vec!["file-fact"]);
    assert_eq!(hit_ids(&top5(&index, "tag:storage")), vec!["meta-fact"]);
    assert_eq!(
        hit_ids(&top5(&index, "persistence tag:cleanup")),
        vec!["meta-fact"]
    );
    // Prefix matching of a last word still being typed (3-4 letters).
    assert_eq!(hit_ids(&top5(&index, "zeph")), vec!["tool-fact"]);

    // The `@@` fallback: reference words, ranked sessions with scores.
    let ranked = index
        .rank_reference("zephyrine-toolchain", "/p/alpha", 3)
        .expect("rank");
    assert_eq!(ranked[0].session.id, "tool-fact");
    assert!(ranked[0].score > 0.0);
    assert!(index
        .rank_reference("qqxyzzy-vorpal", "/p", 3)
        .expect("rank")
        .is_empty());
    // Wired into the resolver as its last rule: words that only a tool result
    // holds resolve, as a search match; words found nowhere stay a miss.
    let catalog = session_index::resolve::Catalog::new().with_search(true);
    let (sessions, metas) = (agent.join("sessions"), agent.join("sessions-meta"));
    let found = catalog
        .resolve(&sessions, &metas, "/p/alpha", "zephyrine-toolchain")
        .expect("a search match");
    assert_eq!(
        (found.entry.id.as_str(), found.rule),
        ("tool-fact", session_index::resolve::Rule::Search)
    );
    assert!(catalog
        .resolve(&sessions, &metas, "/p/alpha", "qqxyzzy-vorpal")
        .is_err());

    // Filters: project and time.
    let only = |project: &str, text: &str| {
        let query = Query {
            project: Some(project.into()),
            limit: 5,
            ..Query::parse(text).expect("a valid query")
        };
        hit_ids(&index.search(&query).expect("search"))
    };
    let mut beta = only("/p/beta", "purple");
    beta.sort();
    assert_eq!(beta, vec!["phrase-apart", "phrase-fact"]);
    assert!(only("/p/alpha", "purple").is_empty());
    let future = Query {
        since_ms: Some(u64::MAX / 2),
        limit: 5,
        ..Query::parse("zephyrine").expect("a valid query")
    };
    assert!(index.search(&future).expect("search").is_empty());
    let past = Query {
        until_ms: Some(1000),
        limit: 5,
        ..Query::parse("zephyrine").expect("a valid query")
    };
    assert!(index.search(&past).expect("search").is_empty());

    // The current project ranks first among equals.
    let mut other = Writer::new(agent, "/p/delta", "tool-fact-twin");
    other.user("why does the build fail on the runner?");
    other.tool(
        "bash",
        json!({"command": "cargo build"}),
        "error: linker `cc` not found: the zephyrine toolchain is missing",
    );
    let index = store_updated(agent, None);
    for cwd in ["/p/delta", "/p/alpha"] {
        let query = Query {
            current_cwd: Some(cwd.into()),
            limit: 5,
            ..Query::parse("zephyrine").expect("a valid query")
        };
        assert_eq!(index.search(&query).expect("search")[0].session.cwd, cwd);
    }
}

#[test]
fn bad_queries_get_one_line_errors_and_syntax_is_never_passed_raw() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let agent = dir.path();
    let mut w = Writer::new(agent, "/p", "syntax");
    w.user("NEAR(a b) AND OR NOT \"quoted\" column:value ^start");
    let index = store_updated(agent, None);
    for text in [
        "NEAR(a b)",
        "AND",
        "col:value",
        "\"unterminated",
        "a OR",
        "^start",
        "*",
        "-",
        "(((",
        "a -\"\"",
    ] {
        match Query::parse(text) {
            Ok(q) => {
                index
                    .search(&Query { limit: 5, ..q })
                    .unwrap_or_else(|e| panic!("{text:?} failed: {e}"));
            }
            Err(e) => assert!(!e.to_string().contains('\n'), "{e}"),
        }
    }
    assert!(Query::parse("!!! ...").is_err());
    assert_eq!(hit_ids(&top5(&index, "NEAR(a b)")), vec!["syntax"]);
}

#[test]
fn updates_follow_appends_truncation_rewrites_deletion_and_meta() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let agent = dir.path();
    let mut w = Writer::new(agent, "/p", "grows");
    let root = w.user("first words about capybaras");
    w.assistant("capybaras are large rodents");
    let mut index = store_updated(agent, None);
    assert_eq!(hit_ids(&top5(&index, "capybaras")), vec!["grows"]);

    // Append: only the new lines are read, nothing is indexed twice, and the
    // ranking rows are those a fresh build of the file has: how the index was
    // built (a pass after each agent run in pi) never changes how it ranks.
    let ranking_rows = |agent: &Path| -> Vec<(i64, Vec<u8>)> {
        let conn = rusqlite::Connection::open(session_index::store::store_path(agent))
            .expect("open the file");
        let mut rows = conn
            .prepare("SELECT id & 1048575, sz FROM docs_docsize ORDER BY id")
            .expect("docs sizes");
        rows.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .and_then(Iterator::collect)
            .expect("ranking rows")
    };
    let len_before = std::fs::metadata(&w.path).expect("stat").len();
    w.user("now about axolotls");
    // A half-written line is left for later.
    std::fs::OpenOptions::new()
        .append(true)
        .open(&w.path)
        .and_then(|mut f| std::io::Write::write_all(&mut f, b"{\"type\":\"message\",\"id\":\"half"))
        .expect("append half a line");
    let report = index
        .update(&agent.join("sessions"), &agent.join("sessions-meta"), None)
        .expect("update");
    assert_eq!(report.updated, 1);
    assert_eq!(hit_ids(&top5(&index, "axolotls")), vec!["grows"]);
    let hits = top5(&index, "capybaras");
    assert_eq!(
        hits[0].snippets.len(),
        2,
        "the old entries are there once each: {:?}",
        hits[0].snippets
    );
    assert_eq!(hits[0].session.message_count, 3);
    assert!(len_before > 0);
    let fresh = tempfile::tempdir().expect("a temporary directory");
    let copy = crate::support::search::project_dir(fresh.path(), "/p")
        .join(w.path.file_name().expect("a file name"));
    std::fs::copy(&w.path, copy).expect("copy the session");
    drop(store_updated(fresh.path(), None));
    assert_eq!(
        ranking_rows(agent),
        ranking_rows(fresh.path()),
        "ranking rows after an append, and fresh"
    );

    // The half line completed, then a new branch from the root: the earlier entries are abandoned.
    std::fs::OpenOptions::new()
        .append(true)
        .open(&w.path)
        .and_then(|mut f| std::io::Write::write_all(&mut f, b"\",\"parentId\":null,\"timestamp\":\"t\",\"message\":{\"role\":\"user\",\"content\":\"finished half line\"}}\n"))
        .expect("finish the line");
    w.user_after(Some(&root), "a different direction with okapis");
    store_updated(agent, None);
    let hits = top5(&index, "axolotls");
    assert!(
        hits[0].snippets[0].abandoned,
        "moved off the active branch: {:?}",
        hits[0].snippets
    );
    assert!(!top5(&index, "okapis")[0].snippets[0].abandoned);
    assert!(!top5(&index, "capybaras")[0]
        .snippets
        .iter()
        .any(|s| s.entry_id.as_deref() == Some(&root) && s.abandoned));
    assert_eq!(
        hit_ids(&top5(&index, "\"finished half line\"")),
        vec!["grows"]
    );

    // Meta written later is picked up.
    write_meta(
        agent,
        &w,
        "Rodent facts",
        "All about capybaras.",
        &["animals"],
    );
    store_updated(agent, None);
    assert_eq!(
        top5(&index, "rodent")[0].session.name.as_deref(),
        Some("Rodent facts")
    );

    // Truncated (shorter) file: read again whole.
    let text = std::fs::read_to_string(&w.path).expect("read");
    let first_two: Vec<&str> = text.lines().take(2).collect();
    std::fs::write(&w.path, format!("{}\n", first_two.join("\n"))).expect("truncate");
    store_updated(agent, None);
    assert!(top5(&index, "axolotls").is_empty());
    assert_eq!(hit_ids(&top5(&index, "capybaras")), vec!["grows"]);

    // Rewritten in place, same length and inode, different text: read again whole.
    let text = std::fs::read_to_string(&w.path).expect("read");
    let changed = text.replace("capybaras", "wombatses");
    assert_eq!(changed.len(), text.len());
    std::fs::write(&w.path, changed).expect("rewrite");
    // Later than the last write, even on a coarse clock.
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(2);
    std::fs::File::options()
        .append(true)
        .open(&w.path)
        .and_then(|f| f.set_modified(later))
        .expect("set mtime");
    store_updated(agent, None);
    let stale = top5(&index, "capybaras");
    assert!(
        stale
            .iter()
            .all(|h| h.snippets.iter().all(|s| s.role == "meta")),
        "stale text after a rewrite: {stale:?}"
    );
    assert_eq!(hit_ids(&top5(&index, "wombatses")), vec!["grows"]);

    // Deleted: it drops out.
    std::fs::remove_file(&w.path).expect("delete");
    let report = index
        .update(&agent.join("sessions"), &agent.join("sessions-meta"), None)
        .expect("update");
    assert_eq!(report.removed, 1);
    assert!(top5(&index, "wombatses").is_empty());
    assert!(index.records().expect("sessions").is_empty());
    assert_eq!(index.integrity_check().expect("check"), "ok");
}

/// Issue 24: an edit in place that keeps the size and puts the mtime back
/// is read again (the ctime moved), by a whole pass and by the one-file
/// update `agent_end` runs, never served stale.
#[test]
fn an_edit_in_place_that_keeps_size_and_mtime_is_read_again() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let agent = dir.path();
    let mut w = Writer::new(agent, "/p", "edited");
    w.user("notes about narwhals");
    w.assistant("narwhals have tusks");
    let mut index = store_updated(agent, None);
    assert_eq!(hit_ids(&top5(&index, "narwhals")), vec!["edited"]);
    let (sessions, metas) = (agent.join("sessions"), agent.join("sessions-meta"));
    for (round, (old, new)) in [("narwhals", "seahorse"), ("seahorse", "starfish")]
        .into_iter()
        .enumerate()
    {
        // Past the filesystem's clock tick, so the ctime moves.
        std::thread::sleep(std::time::Duration::from_millis(20));
        let mtime = std::fs::metadata(&w.path)
            .and_then(|m| m.modified())
            .expect("mtime");
        let text = std::fs::read_to_string(&w.path).expect("read");
        let edited = text.replace(old, new);
        assert_eq!(edited.len(), text.len());
        std::fs::write(&w.path, edited).expect("edit in place");
        std::fs::File::options()
            .append(true)
            .open(&w.path)
            .and_then(|f| f.set_modified(mtime))
            .expect("put the mtime back");
        if round == 0 {
            index.update(&sessions, &metas, None).expect("update");
        } else {
            index.update_file(&w.path, &metas).expect("update the file");
        }
        assert!(
            top5(&index, old).is_empty(),
            "{old}: served stale (round {round})"
        );
        assert_eq!(hit_ids(&top5(&index, new)), vec!["edited"], "round {round}");
    }
}

#[test]
fn the_sessions_table_holds_the_catalog_fields() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let agent = dir.path();
    let mut w = Writer::new(agent, "/p/cat", "catalog");
    w.user("the opening request\nwith two lines");
    w.assistant("fine");
    write_meta(agent, &w, "Catalog row", "a summary", &["t1"]);
    let index = store_updated(agent, None);
    let row = index
        .records()
        .expect("query")
        .into_iter()
        .find(|s| s.id == "catalog")
        .expect("indexed");
    assert_eq!(row.path, w.path);
    assert_eq!(row.cwd, "/p/cat");
    assert_eq!(row.created, "2026-11-01T10:00:00.000Z");
    assert_eq!(row.name.as_deref(), Some("Catalog row"));
    assert_eq!(row.slug.as_deref(), Some("catalog-row"));
    assert_eq!(row.summary.as_deref(), Some("a summary"));
    assert_eq!(
        row.first_message.as_deref(),
        Some("the opening request\nwith two lines")
    );
    assert!(row.has_meta);
    assert_eq!(row.message_count, 2);
    assert_eq!(row.model.as_deref(), Some("local/extractive"));
    assert!(row.modified_ms > 0);
}

/// What pi's `/resume` lists comes out of the index as the summary tier
/// (checked against pi in session_parity.rs) reads it from the files: the
/// last activity (pi's "modified": latest user or assistant message, else
/// the header time) and the first message (redacted, clipped), also after an append.
#[test]
fn the_sessions_table_lists_what_pi_lists() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let agent = dir.path();
    assert!(
        copy_real_sessions(agent) >= 10,
        "the shared fixtures hold real sessions"
    );
    let mut w = Writer::new(agent, "/p/list", "listed");
    w.user("first words");
    Writer::new(agent, "/p/list", "no-messages");
    let check = |index: &Store| {
        let rows = index.records().expect("sessions");
        assert!(rows.len() >= 12, "{}", rows.len());
        for row in rows {
            let s = session_index::session::summarize(&row.path).expect("a session");
            assert_eq!(row.last_activity_ms, s.last_activity_ms, "{}", row.id);
            let clip = |m: String| {
                session_index::text::clip(&session_index::redact::redact(&m), 500, Keep::Head)
            };
            assert_eq!(row.first_message, s.first_message.map(clip), "{}", row.id);
        }
    };
    let mut index = store_updated(agent, None);
    check(&index);
    let before = index
        .records()
        .expect("sessions")
        .into_iter()
        .find(|r| r.id == "listed")
        .expect("listed");
    w.assistant("later words");
    index
        .update(&agent.join("sessions"), &agent.join("sessions-meta"), None)
        .expect("update");
    check(&index);
    let after = index
        .records()
        .expect("sessions")
        .into_iter()
        .find(|r| r.id == "listed")
        .expect("listed");
    assert!(
        after.last_activity_ms > before.last_activity_ms,
        "{before:?} {after:?}"
    );
}

#[test]
fn secrets_and_image_data_never_reach_the_index_file() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let agent = dir.path();
    let key = "sk-ant-api03-Zq8vLr2Xw9Tb4Nc7Md1Pe6Hf3Jg5Ks0";
    let image = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkZPhfDwAChwGA60e6kgAAAABJRU5ErkJggg";
    let mut w = Writer::new(agent, "/p", "secretive");
    w.user(&format!(
        "my key is {key} please use it for the walrus service"
    ));
    w.tool(
        "bash",
        json!({"command": format!("curl -H 'Authorization: Bearer {key}' https://x")}),
        &format!("ANTHROPIC_API_KEY={key}"),
    );
    w.image(image);
    write_meta(agent, &w, "Walrus", &format!("used {key}"), &[]);
    let index = store_updated(agent, None);
    assert_eq!(hit_ids(&top5(&index, "walrus")), vec!["secretive"]);
    drop(index);
    let mut bytes = Vec::new();
    for entry in std::fs::read_dir(agent.join("sessions-index"))
        .expect("the index dir")
        .flatten()
    {
        bytes.extend(std::fs::read(entry.path()).expect("read an index file"));
    }
    assert!(bytes.len() > 10_000);
    let has = |needle: &[u8]| bytes.windows(needle.len()).any(|w| w == needle);
    assert!(!has(key.as_bytes()), "the secret is in the index");
    assert!(
        !has(&key.as_bytes()[..20]),
        "part of the secret is in the index"
    );
    assert!(!has(&image.as_bytes()[..40]), "image data is in the index");
    assert!(has(b"walrus"));
}

/// A store of one session `id` saying `text`, built and closed: its file's path.
fn one_session_stored(agent: &Path, id: &str, text: &str) -> std::path::PathBuf {
    Writer::new(agent, "/p", id).user(text);
    drop(store_updated(agent, None));
    session_index::store::store_path(agent)
}

#[test]
fn a_corrupt_or_old_index_is_rebuilt_with_one_warning() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let agent = dir.path();
    let path = one_session_stored(agent, "survivor", "pangolin scales");

    // Old schema: another user_version and other tables.
    {
        let conn = rusqlite::Connection::open(&path).expect("open");
        conn.execute_batch(
            "DROP TABLE sessions; CREATE TABLE old_stuff(x); PRAGMA user_version = 0;",
        )
        .expect("age it");
    }
    let index = Store::open(agent).expect("reopen");
    assert!(
        index
            .rebuilt
            .as_deref()
            .is_some_and(|r| r.contains("schema version 0")),
        "{:?}",
        index.rebuilt
    );
    drop(index);
    let index = store_updated(agent, None);
    assert!(index.rebuilt.is_none(), "warned once only");
    assert_eq!(hit_ids(&top5(&index, "pangolin")), vec!["survivor"]);
    drop(index);

    // Garbage: not a database at all.
    for suffix in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    std::fs::write(&path, vec![0x5a; 8192]).expect("corrupt it");
    let index = Store::open(agent).expect("reopen");
    assert!(index.rebuilt.is_some());
    drop(index);
    let index = store_updated(agent, None);
    assert_eq!(hit_ids(&top5(&index, "pangolin")), vec!["survivor"]);
    assert_eq!(index.integrity_check().expect("check"), "ok");
}

/// The full-text index keeps the terms of a write transaction in memory up
/// to 8 MB before writing a segment (`hashsize`, FTS5's default 1 MB; see
/// `schema::ADDITIONS`): set in a new store, and added in place to a store
/// made before it, which keeps its rows.
#[test]
fn the_full_text_index_flushes_at_8_mb_in_new_and_older_stores() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let agent = dir.path();
    let path = one_session_stored(agent, "kept", "okapi stripes");
    let hashsize = || -> Option<i64> {
        let conn = rusqlite::Connection::open(&path).expect("open");
        let sql = "SELECT v FROM docs_config WHERE k = 'hashsize'";
        conn.query_row(sql, [], |r| r.get(0)).ok()
    };
    assert_eq!(hashsize(), Some(8 << 20), "a new store");

    // A store of the same schema version made before the setting.
    {
        let conn = rusqlite::Connection::open(&path).expect("open");
        conn.execute("DELETE FROM docs_config WHERE k = 'hashsize'", [])
            .expect("make it older");
    }
    assert_eq!(hashsize(), None);
    let index = Store::open(agent).expect("reopen");
    assert!(index.rebuilt.is_none(), "{:?}", index.rebuilt);
    assert_eq!(hashsize(), Some(8 << 20), "added in place");
    assert_eq!(hit_ids(&top5(&index, "okapi")), vec!["kept"]);
}

#[test]
fn sessions_privacy_excludes_are_never_stored_or_returned() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let agent = dir.path();
    planted(agent);
    let privacy: session_index::config::PrivacyConfig =
        serde_json::from_value(json!({"exclude": ["/p/alpha"]})).expect("a privacy config");
    // Stored before the rule existed: never returned once it does.
    let before = store_updated(agent, None);
    assert_eq!(
        hit_ids(&top5(&before, "zephyrine toolchain")).first(),
        Some(&"tool-fact".to_string())
    );
    drop(before);
    let hidden = Store::open(agent).expect("open").excluding(&privacy);
    assert!(
        top5(&hidden, "zephyrine toolchain").is_empty(),
        "an excluded project's session is not returned"
    );
    assert_eq!(
        hit_ids(&top5(&hidden, "quokkadb")),
        vec!["meta-fact"],
        "other projects still are"
    );

    // A fresh index with the rule never stores the excluded session's text.
    std::fs::remove_dir_all(agent.join("sessions-index")).expect("remove the index");
    let mut index = Store::open(agent).expect("open").excluding(&privacy);
    index
        .update(&agent.join("sessions"), &agent.join("sessions-meta"), None)
        .expect("update");
    assert!(top5(&index, "zephyrine").is_empty());
    assert!(
        top5(&index, "marmoset").is_empty(),
        "both /p/alpha sessions stay out"
    );
    drop(index);
    for file in std::fs::read_dir(agent.join("sessions-index")).expect("the index directory") {
        let bytes = std::fs::read(file.expect("an entry").path()).expect("read an index file");
        assert!(
            !bytes.windows(9).any(|w| w == b"zephyrine"),
            "excluded text reached the index files"
        );
    }
}

#[test]
fn a_finished_word_is_never_the_prefix_of_an_unrelated_one() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let agent = dir.path();
    Writer::new(agent, "/p/alpha", "charter-talk").user("the project charter is signed");
    Writer::new(agent, "/p/alpha", "auth-talk").user("the authentication flow is broken");
    let index = store_updated(agent, None);
    assert!(
        hit_ids(&top5(&index, "chart")).is_empty(),
        "chart never finds charter"
    );
    assert_eq!(
        hit_ids(&top5(&index, "auth")),
        vec!["auth-talk"],
        "a short last word may still be being typed"
    );
}

#[test]
fn an_at_reference_names_another_session_and_never_makes_this_one_match() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let agent = dir.path();
    Writer::new(agent, "/p/alpha", "refers").user("Link @@copyrigth with @@cron-jobs please");
    Writer::new(agent, "/p/alpha", "says-it").user("fix the cron jobs of the nightly report");
    let index = store_updated(agent, None);
    assert!(hit_ids(&top5(&index, "copyrigth")).is_empty());
    assert_eq!(hit_ids(&top5(&index, "cron")), vec!["says-it"]);
    assert_eq!(
        hit_ids(&top5(&index, "link please")),
        vec!["refers"],
        "the rest of the prompt is indexed"
    );
}

#[test]
fn snippets_read_again_from_the_file_show_no_secret_of_any_entry() {
    // The snippets are cut from each shown entry's text made again from its
    // line, redacted by the reader and by the items of the message (not a
    // third time as a whole): each entry kind with a secret beside a word
    // that finds it, and a secret brought next to its label by the removal
    // of an `@@` reference.
    let dir = tempfile::tempdir().expect("a temporary directory");
    let agent = dir.path();
    let key = "sk-ant-api03-Zq8vLr2Xw9Tb4Nc7Md1Pe6Hf3Jg5Ks0";
    let token = "ghp_R8mVq2Lx7Tn4Wc9Pz1Hk6Jd3Fs5Gb0Ya2Ue";
    let filler = "the walrus ledger was reconciled again ".repeat(70);
    let mut w = Writer::new(agent, "/p", "leaky-snippets");
    w.user(&format!("wombatone my key is {key} keep it"));
    w.assistant(&format!("wombattwo the token {token} works"));
    w.tool(
        "bash",
        json!({"command": format!("curl -H 'Authorization: Bearer {key}' wombatthree"), "token": token}),
        &format!("wombatfour ANTHROPIC_API_KEY={key}\nGITHUB_TOKEN={token}"),
    );
    w.assistant(&format!("{filler}\nwombatfive {key} and {token}\n{filler}"));
    w.user(&format!("wombatsix GITHUB_TOKEN=`@@older-session` {token}"));
    let index = store_updated(agent, None);
    for marker in [
        "wombatone",
        "wombattwo",
        "wombatthree",
        "wombatfour",
        "wombatfive",
        "wombatsix",
    ] {
        let hits = top5(&index, marker);
        assert_eq!(hit_ids(&hits), vec!["leaky-snippets"], "{marker}");
        let shown: Vec<String> = hits[0]
            .snippets
            .iter()
            .map(|s| s.marked("[", "]"))
            .collect();
        assert!(
            shown.iter().any(|s| s.contains(&format!("[{marker}]"))),
            "{marker}: the entry holding it is shown: {shown:?}"
        );
        for secret in [key, token] {
            assert!(
                !shown
                    .iter()
                    .any(|s| s.contains(&secret[..16]) || s.contains(&secret[secret.len() - 16..])),
                "{marker}: a secret in a snippet: {shown:?}"
            );
        }
    }
}

/// Snippets use an entry's text read as written only when it is the text
/// the update stored (redacted): a line rewritten behind the
/// store's back with a secret in place of clean text of the same length
/// (same entry id, same offsets, same file size) is redacted when it is
/// shown, not shown as read.
#[test]
fn a_line_rewritten_with_a_secret_since_the_update_shows_it_redacted() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let agent = dir.path();
    let key = "sk-ant-api03-Zq8vLr2Xw9Tb4Nc7Md1Pe6Hf3Jg5Ks0";
    let clean = "x".repeat(key.len());
    let mut w = Writer::new(agent, "/p", "rewritten");
    w.user("the capybara ledger is open");
    w.user(&format!("wombatseven my key is {clean} keep it"));
    w.assistant("wombatseven noted, the capybara ledger is closed");
    let index = store_updated(agent, None);
    let shown = |query: &str| -> Vec<String> {
        let hits = top5(&index, query);
        assert_eq!(hit_ids(&hits), vec!["rewritten"], "{query}");
        hits[0]
            .snippets
            .iter()
            .map(|s| s.marked("[", "]"))
            .collect()
    };
    // Before: the clean text is shown as the update stored it.
    assert!(
        shown("wombatseven").iter().any(|s| s.contains(&clean)),
        "{:?}",
        shown("wombatseven")
    );
    let text = std::fs::read_to_string(&w.path).expect("read");
    let rewritten = text.replace(&clean, key);
    assert_eq!(rewritten.len(), text.len());
    std::fs::write(&w.path, rewritten).expect("rewrite in place");
    // No update since: the store still holds the clean text's hash.
    let after = shown("wombatseven");
    assert!(
        after.iter().any(|s| s.contains("[wombatseven] my key is")),
        "the rewritten entry is shown: {after:?}"
    );
    assert!(
        after
            .iter()
            .all(|s| !s.contains(&key[..16]) && !s.contains(&key[key.len() - 16..])),
        "a secret in a snippet: {after:?}"
    );
    assert!(after.iter().any(|s| s.contains("[REDACTED]")), "{after:?}");
}

/// A pass that finds nothing to write remembers the files' states (one
/// digest), and the next pass over the same files reads no stored state;
/// whatever changes a session file, a meta file or the rules still reaches
/// the store at the next pass.
#[test]
fn an_up_to_date_store_still_sees_every_change_after_it() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let agent = dir.path();
    let mut alpha = Writer::new(agent, "/p/alpha", "alpha");
    alpha.user("the ocelot migration plan");
    let mut beta = Writer::new(agent, "/p/beta", "beta");
    beta.user("the capybara release notes");
    let (sessions, metas) = (agent.join("sessions"), agent.join("sessions-meta"));
    let update = |index: &mut Store| index.update(&sessions, &metas, None).expect("update");
    let unchanged = UpdateReport {
        files: 2,
        ..UpdateReport::default()
    };
    let mut index = Store::open(agent).expect("open");
    assert_eq!(update(&mut index).updated, 2);
    assert_eq!(update(&mut index), unchanged, "finds nothing to write");
    assert_eq!(update(&mut index), unchanged, "trusts the pass before");

    alpha.user("and the narwhal rollback");
    assert_eq!(update(&mut index).updated, 1, "an append");
    assert_eq!(update(&mut index), unchanged);
    assert_eq!(hit_ids(&top5(&index, "narwhal")), vec!["alpha"]);

    write_meta(
        agent,
        &beta,
        "Release",
        "the walrus changelog",
        &["release"],
    );
    assert_eq!(update(&mut index).updated, 1, "a new meta file");
    assert_eq!(update(&mut index), unchanged);
    assert_eq!(hit_ids(&top5(&index, "walrus")), vec!["beta"]);

    // Another process under other rules leaves the store up to date for them.
    let privacy: session_index::config::PrivacyConfig =
        serde_json::from_value(json!({"exclude": ["/p/beta"]})).expect("a privacy config");
    let mut hidden = Store::open(agent).expect("open").excluding(&privacy);
    assert_eq!(update(&mut hidden).removed, 1);
    assert_eq!(update(&mut hidden), unchanged);
    drop(hidden);
    assert_eq!(
        update(&mut index).updated,
        1,
        "under this store's rules the session is back"
    );
    assert_eq!(update(&mut index), unchanged);

    // Rewritten in place, same size, its mtime put back: its ctime moved.
    let modified = std::fs::metadata(&alpha.path)
        .and_then(|m| m.modified())
        .expect("mtime");
    let text = std::fs::read_to_string(&alpha.path).expect("read the session");
    std::fs::write(&alpha.path, text.replace("ocelot", "axolot")).expect("rewrite it");
    std::fs::File::options()
        .write(true)
        .open(&alpha.path)
        .and_then(|f| f.set_modified(modified))
        .expect("put the mtime back");
    assert_eq!(update(&mut index).updated, 1, "rewritten in place");
    assert_eq!(hit_ids(&top5(&index, "axolot")), vec!["alpha"]);
    assert!(top5(&index, "ocelot").is_empty());

    std::fs::remove_file(&beta.path).expect("delete a session");
    assert_eq!(update(&mut index).removed, 1, "a deleted session");
    assert_eq!(
        update(&mut index),
        UpdateReport {
            files: 1,
            ..UpdateReport::default()
        }
    );
}

/// A store answering many searches keeps its term counts from one to the
/// next (`kept_counts.rs`): a word counted in no row before a change, by
/// this store or by another process, is found after it, and one counted
/// in a row that is gone finds nothing.
#[test]
fn kept_term_counts_follow_every_change_of_the_store() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let agent = dir.path();
    let mut alpha = Writer::new(agent, "/p/alpha", "alpha");
    alpha.user("the ocelot migration plan");
    let (sessions, metas) = (agent.join("sessions"), agent.join("sessions-meta"));
    let update = |index: &mut Store| index.update(&sessions, &metas, None).expect("update");
    let mut index = Store::open(agent).expect("open");
    assert_eq!(update(&mut index).updated, 1);
    for _ in 0..2 {
        assert!(top5(&index, "narwhal").is_empty());
        assert!(top5(&index, "ocelot migration narwhal").len() == 1);
    }

    // Written by this store.
    alpha.user("and the narwhal rollback");
    assert_eq!(update(&mut index).updated, 1);
    assert_eq!(hit_ids(&top5(&index, "narwhal")), vec!["alpha"]);

    // Written by another process (another connection).
    assert!(top5(&index, "capybara").is_empty());
    let mut beta = Writer::new(agent, "/p/beta", "beta");
    beta.user("the capybara release notes");
    let mut other = Store::open(agent).expect("open");
    assert_eq!(update(&mut other).updated, 1);
    drop(other);
    assert_eq!(hit_ids(&top5(&index, "capybara")), vec!["beta"]);

    // Gone: the kept count of its word is not used.
    std::fs::remove_file(&beta.path).expect("delete a session");
    let mut other = Store::open(agent).expect("open");
    assert_eq!(update(&mut other).removed, 1);
    drop(other);
    assert!(top5(&index, "capybara").is_empty());
    assert_eq!(hit_ids(&top5(&index, "narwhal ocelot")), vec!["alpha"]);
}

/// A pass over many files copies no WAL into the store's file while it
/// writes (`PASS_CHECKPOINT_PAGES` in update.rs): at SQLite's default a
/// commit past 1,000 WAL pages (4 MB) checkpointed, and a first build
/// checkpointed every few transactions. Whatever the transactions' sizes,
/// the pass's last commit finds more than 1,000 pages here, so without the
/// raised bound the store's file has grown by the time the pass ends.
#[test]
fn a_pass_over_many_files_leaves_its_frames_in_the_wal() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let agent = dir.path();
    // Words no other row has: each one a term of its own in the full-text index.
    let mut n: u64 = 1;
    let mut word = || {
        n = n
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (0..8)
            .map(|k| char::from(b'a' + ((n >> (8 + 5 * k)) % 26) as u8))
            .collect::<String>()
    };
    for s in 0..24 {
        let mut session = Writer::new(agent, "/p/wal", &format!("wal-{s}"));
        for _ in 0..12 {
            let text: Vec<String> = (0..700).map(|_| word()).collect();
            session.user(&text.join(" "));
        }
    }
    let index = store_updated(agent, None);
    let store = agent.join("sessions-index").join("index.sqlite");
    let size = |path: &Path| std::fs::metadata(path).map_or(0, |m| m.len());
    let wal = size(Path::new(&format!("{}-wal", store.display())));
    let file = size(&store);
    assert!(
        wal > 4_096 * 1_000,
        "the pass wrote more than 1,000 pages: WAL {wal} bytes"
    );
    assert!(
        file < 4_096 * 64,
        "no checkpoint during the pass: file {file} bytes, WAL {wal}"
    );
    drop(index);
}
