//! Catalog resolution against real pi session files and synthetic ones, in
//! temp agent directories.

use crate::support::synth::{Agent, Synth};
use session_index::resolve::{Catalog, ResolveError, Rule};

fn catalog() -> Catalog {
    Catalog::new()
}

fn resolve(c: &Catalog, a: &Agent, cwd: &str, r: &str) -> Result<String, ResolveError> {
    c.resolve(&a.sessions(), &a.meta_dir(), cwd, r)
        .map(|e| e.entry.id)
}

const REAL: &[&str] = &[
    "real/2026-02-20T12-32-37-832Z_fd67ceb3-8afa-47d5-853e-c1ceedcecfb8.jsonl",
    "real/2026-02-20T21-00-40-026Z_98e32e1b-ebec-496e-a7e1-a52f31f6429f.jsonl",
    "real/issue-4.jsonl",
    "real/contact_form_example.jsonl",
    "generated/branch-summary-2026-11-22T01-22-32-496Z.jsonl",
    "generated/reference-unicode-2026-11-22T01-22-33-704Z.jsonl",
    "generated/long-session-2026-11-22T01-22-35-963Z.jsonl",
];

#[test]
fn real_sessions_resolve_by_id_prefix_name_slug_and_first_message() {
    let a = Agent::new();
    for f in REAL {
        a.copy_fixture(f);
    }
    let c = catalog();
    let cwd = "/home/runner/work/gitclaw/gitclaw";
    assert_eq!(
        resolve(&c, &a, cwd, "fd67ceb3-8afa-47d5-853e-c1ceedcecfb8").unwrap(),
        "fd67ceb3-8afa-47d5-853e-c1ceedcecfb8"
    );
    assert_eq!(
        resolve(&c, &a, cwd, "FD67CEB3").unwrap(),
        "fd67ceb3-8afa-47d5-853e-c1ceedcecfb8"
    );
    assert_eq!(
        resolve(&c, &a, cwd, "98e32e").unwrap(),
        "98e32e1b-ebec-496e-a7e1-a52f31f6429f"
    );
    assert_eq!(resolve(&c, &a, cwd, "issue-4").unwrap(), "issue-4");
    // The generated session named through session_info.
    let cache = "01a200d9-05af-72e1-a418-11f8875a7958";
    assert_eq!(resolve(&c, &a, cwd, "Cache layer design").unwrap(), cache);
    assert_eq!(resolve(&c, &a, cwd, "CACHE LAYER DESIGN").unwrap(), cache);
    assert_eq!(resolve(&c, &a, cwd, "cache-layer-design").unwrap(), cache);
    assert_eq!(resolve(&c, &a, cwd, "cache layer").unwrap(), cache);
    // Never indexed, never named: found by its first user message.
    assert_eq!(
        resolve(&c, &a, cwd, "login page").unwrap(),
        "01a200d9-0a68-74fe-97a6-0180f0a3fefd"
    );
    // Not a pi session file: not in the catalog.
    assert_eq!(c.len(&a.sessions(), &a.meta_dir()), REAL.len() - 1);
    // The shared UUIDv7 time prefix of the generated sessions is ambiguous.
    let err = resolve(&c, &a, cwd, "01a200d9").unwrap_err();
    assert!(
        matches!(err, ResolveError::Ambiguous { ref candidates, .. } if candidates.len() == 3),
        "{err}"
    );
}

#[test]
fn unicode_and_punctuation_names() {
    let a = Agent::new();
    a.session(
        &Synth::new("11111111-0000-4000-8000-000000000001", "/p")
            .name("Résumé: 日本語 parser (v2)!"),
    );
    a.session(&Synth::new("11111111-0000-4000-8000-000000000002", "/p").name("🚀 Launch plan"));
    a.session(
        &Synth::new("11111111-0000-4000-8000-000000000003", "/p").name("Fix \"quoted\" bug, ok?"),
    );
    let c = catalog();
    let id = |n: u8| format!("11111111-0000-4000-8000-00000000000{n}");
    for r in [
        "Résumé: 日本語 parser (v2)!",
        "RÉSUMÉ: 日本語 PARSER (V2)!",
        "résumé:-日本語-parser-(v2)!",
        "résumé-日本語-parser-v2",
    ] {
        assert_eq!(resolve(&c, &a, "/p", r).unwrap(), id(1), "{r}");
    }
    assert_eq!(resolve(&c, &a, "/p", "日本語").unwrap(), id(1));
    assert_eq!(resolve(&c, &a, "/p", "🚀-launch-plan").unwrap(), id(2));
    assert_eq!(resolve(&c, &a, "/p", "launch-plan").unwrap(), id(2));
    assert_eq!(resolve(&c, &a, "/p", "fix-quoted-bug-ok").unwrap(), id(3));
}

#[test]
fn ambiguity_prefers_the_current_project_and_lists_candidates() {
    let a = Agent::new();
    a.session(&Synth::new("aaaaaaaa-0000-4000-8000-000000000001", "/proj/a").name("Auth refactor"));
    a.session(&Synth::new("bbbbbbbb-0000-4000-8000-000000000002", "/proj/b").name("Auth refactor"));
    let c = catalog();
    assert_eq!(
        resolve(&c, &a, "/proj/a", "auth-refactor").unwrap(),
        "aaaaaaaa-0000-4000-8000-000000000001"
    );
    assert_eq!(
        resolve(&c, &a, "/proj/b/", "Auth refactor").unwrap(),
        "bbbbbbbb-0000-4000-8000-000000000002"
    );
    let err = resolve(&c, &a, "/proj/c", "auth-refactor").unwrap_err();
    let text = err.to_string();
    assert!(
        matches!(err, ResolveError::Ambiguous { ref candidates, .. } if candidates.len() == 2),
        "{text}"
    );
    assert!(!text.contains('\n'), "one line: {text}");
    for needle in [
        "aaaaaaaa",
        "bbbbbbbb",
        "/proj/a",
        "/proj/b",
        "Auth refactor",
        "2026-02-20",
    ] {
        assert!(text.contains(needle), "{needle} missing in {text}");
    }
    // Two of the same name in the current project stay ambiguous.
    a.session(&Synth::new("cccccccc-0000-4000-8000-000000000003", "/proj/a").name("Auth refactor"));
    assert!(matches!(
        resolve(&c, &a, "/proj/a", "auth refactor"),
        Err(ResolveError::Ambiguous { .. })
    ));
}

#[test]
fn fuzzy_matches_prefer_the_current_project_and_list_only_the_ties() {
    let a = Agent::new();
    let id = |n: u8| format!("{n}{n}{n}{n}{n}{n}{n}{n}-0000-4000-8000-00000000000{n}");
    a.session(&Synth::new(&id(1), "/proj/a").name("Auth token refresh"));
    a.session(&Synth::new(&id(2), "/proj/b").name("Auth token refresh"));
    // nucleo scores these lower (267 against 287 of 368 for the query below).
    a.session(&Synth::new(&id(3), "/proj/b").name("Oauth token refresh"));
    a.session(&Synth::new(&id(4), "/proj/d").name("Authtoken refresh"));
    a.session(&Synth::new(&id(5), "/proj/e").name("Billing export"));
    let c = catalog();
    // Typos: no exact key matches, only the fuzzy scores decide.
    let typo = "ath tken rfresh";
    assert_eq!(resolve(&c, &a, "/proj/a", typo).unwrap(), id(1));
    assert_eq!(
        resolve(&c, &a, "/proj/d", typo).unwrap(),
        id(4),
        "a near match in the project wins"
    );
    // Elsewhere the two best are tied: both listed, the weaker ones not.
    let err = resolve(&c, &a, "/proj/e", typo).unwrap_err();
    let ResolveError::Ambiguous { candidates, .. } = &err else {
        panic!("{err}")
    };
    let mut ids: Vec<&str> = candidates.iter().map(|c| c.id.as_str()).collect();
    ids.sort();
    assert_eq!(ids, [id(1), id(2)], "{err}");
}

#[test]
fn a_reference_fitting_several_sessions_never_means_the_current_one() {
    let a = Agent::new();
    let (x, y) = (
        "abcdef01-0000-4000-8000-000000000001",
        "abcdef02-0000-4000-8000-000000000002",
    );
    let z = "fedcba03-0000-4000-8000-000000000003";
    a.session(&Synth::new(x, "/p").name("Auth token refresh"));
    a.session(&Synth::new(y, "/q").name("Auth token refresh"));
    a.session(&Synth::new(z, "/p").name("Billing export"));
    a.session(&Synth::new("abcdef04-0000-4000-8000-000000000004", "/r").name("Deploy"));
    let c = catalog();
    let from = |current: &str, r: &str| {
        c.resolve_in_session(&a.sessions(), &a.meta_dir(), "/p", Some(current), r)
            .map(|e| e.entry.id)
    };
    // Without the current session, the project's own match wins (but an id
    // prefix shared by several sessions never guesses).
    assert!(
        matches!(resolve(&c, &a, "/p", "abcdef"), Err(ResolveError::Ambiguous { ref candidates, .. })
        if candidates.len() == 3)
    );
    assert_eq!(resolve(&c, &a, "/p", "Auth token refresh").unwrap(), x);
    assert_eq!(resolve(&c, &a, "/p", "ath tken rfresh").unwrap(), x);
    // Typed in x, the same references mean another session.
    assert!(
        matches!(from(x, "abcdef"), Err(ResolveError::Ambiguous { ref candidates, .. })
        if candidates.len() == 2 && candidates.iter().all(|c| c.id != x))
    );
    assert_eq!(from(x, "Auth token refresh").unwrap(), y);
    assert_eq!(from(x, "ath tken rfresh").unwrap(), y);
    // An exact reference that names only the current session still finds it;
    // fuzzy text never does (the user means a session not found).
    assert_eq!(from(x, x).unwrap(), x);
    assert_eq!(from(z, "Billing export").unwrap(), z);
    assert!(matches!(
        from(z, "blling exprt"),
        Err(ResolveError::NotFound { .. })
    ));

    // The current session's better score does not hide a weaker match
    // elsewhere (nucleo: 287 against 267 of 368).
    let b = Agent::new();
    b.session(&Synth::new(x, "/p").name("Auth token refresh"));
    b.session(&Synth::new(y, "/q").name("Oauth token refresh"));
    let found = c.resolve_in_session(
        &b.sessions(),
        &b.meta_dir(),
        "/p",
        Some(x),
        "ath tken rfresh",
    );
    assert_eq!(found.map(|e| e.entry.id).unwrap(), y);
}

#[test]
fn id_prefixes_need_six_characters_and_uniqueness() {
    let a = Agent::new();
    a.session(&Synth::new("0193aaaa-1111-4000-8000-000000000001", "/p").user(&["alpha"]));
    a.session(&Synth::new("0193aaab-2222-4000-8000-000000000002", "/p").user(&["beta"]));
    let c = catalog();
    assert!(matches!(
        resolve(&c, &a, "/p", "0193aa"),
        Err(ResolveError::Ambiguous { .. })
    ));
    assert_eq!(
        resolve(&c, &a, "/p", "0193aaab").unwrap(),
        "0193aaab-2222-4000-8000-000000000002"
    );
    // Shorter than six: a miss naming the ids it starts.
    let err = resolve(&c, &a, "/p", "0193a").unwrap_err();
    assert!(
        matches!(&err, ResolveError::NotFound { suggestions, .. } if suggestions.len() == 2),
        "{err}"
    );
    for id in ["0193aaaa…", "0193aaab…"] {
        assert!(err.to_string().contains(id), "{err}");
    }
}

#[test]
fn missing_names_suggest_the_nearest() {
    let a = Agent::new();
    a.session(
        &Synth::new("dddddddd-0000-4000-8000-000000000001", "/p")
            .name("Payment service")
            .user(&["x"]),
    );
    a.session(
        &Synth::new("eeeeeeee-0000-4000-8000-000000000002", "/p")
            .name("Logging cleanup")
            .user(&["y"]),
    );
    let c = catalog();
    let err = resolve(&c, &a, "/p", "payment-gateway").unwrap_err();
    match &err {
        ResolveError::NotFound { suggestions, .. } => {
            assert!(
                suggestions.iter().any(|s| s.title == "Payment service"),
                "{err}"
            )
        }
        other => panic!("{other}"),
    }
    assert!(err.to_string().contains("did you mean"), "{err}");
    assert!(matches!(
        resolve(&c, &a, "/p", "zzzz-qqqq"),
        Err(ResolveError::NotFound { .. })
    ));
    // Suggestions are near names: a long first message that merely holds
    // the letters in order is not one.
    a.session(
        &Synth::new("ffffffff-0000-4000-8000-000000000003", "/p").user(&[
            "Run the unit tests, profile the endpoints, note what is thin, then bring it in",
        ]),
    );
    let err = resolve(&c, &a, "/p", "nope-nothing").unwrap_err();
    assert!(
        matches!(&err, ResolveError::NotFound { suggestions, .. } if suggestions.is_empty()),
        "{err}"
    );
}

#[test]
fn meta_files_add_names_descriptions_and_tags_and_orphans_are_file_missing() {
    let a = Agent::new();
    let p = a.session(
        &Synth::new("ffffffff-0000-4000-8000-000000000001", "/p").user(&["please look at this"]),
    );
    a.meta(
        "ffffffff-0000-4000-8000-000000000001",
        "Rate limiter design",
        "Token bucket rate limiting for the API gateway",
        &["ratelimit", "gateway"],
        "Chose a token bucket.",
        &p,
    );
    a.meta(
        "99999999-0000-4000-8000-000000000009",
        "Ghost session",
        "gone",
        &[],
        "",
        &a.sessions().join("x/ghost.jsonl"),
    );
    let c = catalog();
    let id = "ffffffff-0000-4000-8000-000000000001";
    assert_eq!(resolve(&c, &a, "/p", "rate-limiter-design").unwrap(), id);
    assert_eq!(resolve(&c, &a, "/p", "ratelimit").unwrap(), id);
    assert_eq!(resolve(&c, &a, "/p", "token bucket").unwrap(), id);
    let e = c
        .resolve(&a.sessions(), &a.meta_dir(), "/p", id)
        .unwrap()
        .entry;
    assert!(e.has_meta);
    assert_eq!(e.tags, vec!["ratelimit", "gateway"]);
    assert!(matches!(
        resolve(&c, &a, "/p", "ghost-session"),
        Err(ResolveError::FileMissing { .. })
    ));
    // A corrupt meta file is ignored, not fatal.
    std::fs::write(a.meta_dir().join("bad.meta.json"), "{not json").unwrap();
    assert_eq!(resolve(&c, &a, "/p", "rate-limiter-design").unwrap(), id);
}

#[test]
fn path_like_references_and_outside_symlinks_never_resolve() {
    let a = Agent::new();
    a.session(&Synth::new("12345678-0000-4000-8000-000000000001", "/p").name("Inside"));
    // A valid session file outside the sessions dir, reachable only through symlinks.
    let outside_dir = a.tmp.path().join("outside");
    std::fs::create_dir_all(&outside_dir).unwrap();
    let outside = Agent {
        tmp: tempfile::tempdir().unwrap(),
        dir: outside_dir.clone(),
    };
    std::fs::create_dir_all(outside.sessions()).unwrap();
    let secret =
        outside.session(&Synth::new("5ec7e700-0000-4000-8000-000000000001", "/p").name("Secret"));
    let proj = a.sessions().join(crate::support::synth::encode_cwd("/p"));
    std::os::unix::fs::symlink(&secret, proj.join("link.jsonl")).unwrap();
    std::os::unix::fs::symlink(
        secret.parent().unwrap(),
        a.sessions().join("--linked-dir--"),
    )
    .unwrap();
    // Named the pi way, so even the first-use fast path (file names) sees it.
    std::os::unix::fs::symlink(
        &secret,
        proj.join("2026-01-01T00-00-00-000Z_5ec7e700-0000-4000-8000-000000000001.jsonl"),
    )
    .unwrap();
    let c = catalog();
    for r in ["5ec7e700-0000-4000-8000-000000000001", "secret", "5ec7e700"] {
        assert!(
            resolve(&c, &a, "/p", r).is_err(),
            "{r} resolved through a symlink pointing outside"
        );
    }
    let secret_str = secret.to_string_lossy().into_owned();
    for r in [
        "../../etc/passwd",
        "/etc/passwd",
        "~/.ssh/id_rsa",
        "..",
        secret_str.as_str(),
        "C:\\x",
    ] {
        assert!(
            matches!(resolve(&c, &a, "/p", r), Err(ResolveError::Outside { .. })),
            "{r}"
        );
    }
    // A symlink inside pointing inside is fine.
    let inside =
        a.session(&Synth::new("abcdef12-0000-4000-8000-000000000001", "/q").name("Linked inside"));
    std::os::unix::fs::symlink(&inside, proj.join("alias.jsonl")).unwrap();
    assert_eq!(
        resolve(&c, &a, "/p", "linked-inside").unwrap(),
        "abcdef12-0000-4000-8000-000000000001"
    );
}

#[test]
fn refresh_is_incremental_new_files_renames_and_deletions() {
    let a = Agent::new();
    let first = a.session(&Synth::new("a0000000-0000-4000-8000-000000000001", "/p").name("First"));
    let c = catalog();
    assert!(resolve(&c, &a, "/p", "first").is_ok());
    a.session(&Synth::new("b0000000-0000-4000-8000-000000000002", "/p").name("Second"));
    assert_eq!(
        resolve(&c, &a, "/p", "second").unwrap(),
        "b0000000-0000-4000-8000-000000000002"
    );
    // pi appends a session_info entry to rename.
    let mut text = std::fs::read_to_string(&first).unwrap();
    text.push_str(
        "{\"type\":\"session_info\",\"id\":\"zz\",\"parentId\":null,\"timestamp\":\"x\",\"name\":\"Renamed one\"}\n",
    );
    std::fs::write(&first, text).unwrap();
    assert_eq!(
        resolve(&c, &a, "/p", "renamed-one").unwrap(),
        "a0000000-0000-4000-8000-000000000001"
    );
    assert!(resolve(&c, &a, "/p", "First").is_err());
    // A meta file written later adds its name.
    a.meta(
        "b0000000-0000-4000-8000-000000000002",
        "Meta given name",
        "d",
        &[],
        "s",
        &first,
    );
    assert_eq!(
        resolve(&c, &a, "/p", "Second").unwrap(),
        "b0000000-0000-4000-8000-000000000002"
    );
    assert!(resolve(&c, &a, "/p", "meta given name").is_ok());
    std::fs::remove_file(&first).unwrap();
    assert!(resolve(&c, &a, "/p", "a0000000-0000-4000-8000-000000000001").is_err());
    assert_eq!(c.len(&a.sessions(), &a.meta_dir()), 1);
}

#[test]
fn completion_ranks_prefixes_and_current_project_first_and_round_trips() {
    let a = Agent::new();
    a.session(&Synth::new("c1000000-0000-4000-8000-000000000001", "/other").name("Auth tokens"));
    a.session(&Synth::new("c2000000-0000-4000-8000-000000000002", "/p").name("Auth refactor"));
    a.session(&Synth::new("c3000000-0000-4000-8000-000000000003", "/p").name("Database"));
    a.session(&Synth::new("c4000000-0000-4000-8000-000000000004", "/p").user(&["no name here"]));
    let c = catalog();
    let got = c.complete(&a.sessions(), &a.meta_dir(), "/p", None, "auth", 10);
    let ids: Vec<&str> = got.iter().map(|x| &x.id[..2]).collect();
    assert_eq!(ids, vec!["c2", "c1"], "{got:?}");
    let all = c.complete(&a.sessions(), &a.meta_dir(), "/p", None, "", 10);
    assert_eq!(all.len(), 4);
    assert!(all[..3].iter().all(|x| x.cwd == "/p"), "{all:?}");
    for cand in &all {
        let back = c
            .resolve(
                &a.sessions(),
                &a.meta_dir(),
                "/p",
                cand.reference.trim_matches('"'),
            )
            .unwrap();
        assert_eq!(back.entry.id, cand.id, "{cand:?}");
    }
    assert_eq!(
        c.complete(&a.sessions(), &a.meta_dir(), "/p", None, "c3000", 10)[0].id,
        "c3000000-0000-4000-8000-000000000003"
    );
    assert_eq!(
        c.complete(&a.sessions(), &a.meta_dir(), "/p", None, "", 2)
            .len(),
        2
    );
    // What to insert: a slug when it round-trips, a quoted name with spaces, else an id prefix.
    a.session(&Synth::new("c5000000-0000-4000-8000-000000000005", "/p").name("Fix: login  (v2)"));
    a.session(&Synth::new("c6000000-0000-4000-8000-000000000006", "/p").name("Fix:bug"));
    let got = c.complete(&a.sessions(), &a.meta_dir(), "/p", None, "fix", 10);
    let by_id = |p: &str| {
        got.iter()
            .find(|x| x.id.starts_with(p))
            .unwrap_or_else(|| panic!("{p} in {got:?}"))
    };
    assert_eq!(
        (by_id("c5").reference.as_str(), by_id("c5").insert.as_str()),
        ("Fix: login (v2)", "\"Fix: login (v2)\"")
    );
    assert_eq!(by_id("c6").insert, "c6000000");
    assert_eq!(
        c.complete(&a.sessions(), &a.meta_dir(), "/p", None, "auth", 1)[0].insert,
        "auth-refactor"
    );
    for cand in &got {
        let back = c
            .resolve(&a.sessions(), &a.meta_dir(), "/p", &cand.reference)
            .unwrap();
        assert_eq!(back.entry.id, cand.id, "{cand:?}");
        let typed =
            session_index::features::references::parse(&format!("see @@{} now", cand.insert), 1);
        assert_eq!(typed.len(), 1, "{cand:?}");
        assert_eq!(
            c.resolve(&a.sessions(), &a.meta_dir(), "/p", &typed[0].target)
                .unwrap()
                .entry
                .id,
            cand.id
        );
    }
}

#[test]
fn ancestors_follow_parent_session_and_note_missing_parents() {
    let a = Agent::new();
    let root = a.session(&Synth::new("70000000-0000-4000-8000-000000000001", "/p").name("Root"));
    let mid = a.session(
        &Synth::new("70000000-0000-4000-8000-000000000002", "/p")
            .name("Mid")
            .parent(&root),
    );
    let leaf = a.session(
        &Synth::new("70000000-0000-4000-8000-000000000003", "/p")
            .name("Leaf")
            .parent(&mid),
    );
    let c = catalog();
    let e = c
        .resolve(
            &a.sessions(),
            &a.meta_dir(),
            "/p",
            "70000000-0000-4000-8000-000000000003",
        )
        .unwrap()
        .entry;
    assert_eq!(e.path, leaf);
    let chain = c.ancestors(&a.sessions(), &a.meta_dir(), &e, 5);
    let names: Vec<String> = chain
        .iter()
        .map(|x| match x {
            session_index::resolve::Ancestor::Found(e) => e.pi_name().unwrap_or_default().into(),
            session_index::resolve::Ancestor::Missing { .. } => "missing".into(),
            session_index::resolve::Ancestor::Excluded => "excluded".into(),
        })
        .collect();
    assert_eq!(names, vec!["Mid", "Root"]);
    assert_eq!(c.ancestors(&a.sessions(), &a.meta_dir(), &e, 1).len(), 1);
    std::fs::remove_file(&root).unwrap();
    let chain = c.ancestors(&a.sessions(), &a.meta_dir(), &e, 5);
    assert!(
        matches!(
            chain.last(),
            Some(session_index::resolve::Ancestor::Missing { .. })
        ),
        "{chain:?}"
    );
}

#[test]
fn before_the_first_build_ids_and_exact_names_resolve_from_file_names_and_meta_files() {
    let a = Agent::new();
    let id = "0a1b2c3d-0000-4000-8000-000000000001";
    let p = a.session(
        &Synth::new(id, "/p")
            .name("Quick one")
            .user(&["hello there"]),
    );
    a.meta(id, "Meta name", "A description", &["tag1"], "A summary", &p);
    a.session(&Synth::new("0a1b2c3e-0000-4000-8000-000000000002", "/p").name("Other"));
    a.session(&Synth::new("0b1b2c3d-0000-4000-8000-000000000003", "/q").name("Twin"));
    a.session(&Synth::new("0b1b2c3d-0000-4000-8000-000000000004", "/p").name("Twin"));
    a.meta(
        "0b1b2c3d-0000-4000-8000-000000000005",
        "Ghost",
        "",
        &[],
        "",
        &a.sessions().join("x/ghost.jsonl"),
    );
    // A plain reference that is also an id prefix resolves as the id.
    a.session(&Synth::new("zebras-0001", "/p"));
    a.session(&Synth::new("0b1b2c3d-0000-4000-8000-000000000006", "/p").name("zebras"));
    let cold = |r: &str| {
        let c = catalog();
        let got = c.resolve(&a.sessions(), &a.meta_dir(), "/p", r);
        (got, c.is_warm(&a.sessions(), &a.meta_dir()))
    };
    // Answered from the files before any index exists, in full (the session
    // file is read once found).
    for (r, rule) in [
        ("0A1B2C3D", Rule::Prefix),
        (id, Rule::Id),
        ("meta-name", Rule::Slug),
        ("zebras", Rule::Prefix),
    ] {
        let (got, warm) = cold(r);
        let got = got.unwrap_or_else(|e| panic!("{r}: {e}"));
        assert!(!warm, "{r}: answered without the full build");
        assert_eq!(got.rule, rule, "{r}");
        if r != "zebras" {
            assert_eq!(got.entry.pi_name(), Some("Quick one"));
            assert_eq!(got.entry.first_message.as_deref(), Some("hello there"));
            assert_eq!(got.entry.description.as_deref(), Some("A description"));
        }
    }
    // Names only pi's session_info holds, ambiguous prefixes and fuzzy text
    // need the index; every answer agrees with a catalog that built it.
    let built = catalog();
    built.refresh_task(&a.sessions(), &a.meta_dir())();
    for r in [
        "Quick one",
        "0a1b2c",
        "Twin",
        "Ghost",
        "quick on",
        "0A1B2C3D",
        "meta name",
        "zebras",
        "nothing like it",
    ] {
        let (got, _) = cold(r);
        assert_eq!(
            got,
            built.resolve(&a.sessions(), &a.meta_dir(), "/p", r),
            "{r:?}"
        );
    }
    // A session_info name only the session file holds: found in the index.
    assert_eq!(cold("Quick one").0.map(|r| r.rule), Ok(Rule::Name));
    assert!(matches!(
        cold("0a1b2c").0,
        Err(ResolveError::Ambiguous { .. })
    ));
    assert_eq!(
        cold("Twin").0.unwrap().entry.id,
        "0b1b2c3d-0000-4000-8000-000000000004"
    );
    // A copy outside pi's layout (directly in the sessions directory) is not listed.
    std::fs::write(
        a.sessions().join("renamed.jsonl"),
        std::fs::read(&p).unwrap(),
    )
    .unwrap();
    assert_eq!(
        cold(id).0.unwrap().entry.path,
        p,
        "copies of a session are one session"
    );
}

#[test]
fn completion_shows_titles_matches_their_words_and_never_offers_the_current_session_first() {
    let a = Agent::new();
    a.session(
        &Synth::new("c7000000-0000-4000-8000-000000000007", "/p")
            .user(&["## Cron jobs for the nightly build\nThey fail."]),
    );
    a.session(&Synth::new("c8000000-0000-4000-8000-000000000008", "/p").name("Crontab cleanup"));
    let c = catalog();
    // An unnamed session is shown by its first-message title, and found by its words.
    let got = c.complete(&a.sessions(), &a.meta_dir(), "/p", None, "cro", 10);
    let titles: Vec<&str> = got.iter().map(|x| x.title.as_str()).collect();
    assert_eq!(titles.len(), 2, "{got:?}");
    assert!(
        titles.contains(&"Cron jobs for the nightly build"),
        "{titles:?}"
    );
    let by_word = c.complete(&a.sessions(), &a.meta_dir(), "/p", None, "nightly", 10);
    assert_eq!(by_word.len(), 1, "{by_word:?}");
    assert_eq!(by_word[0].id, "c7000000-0000-4000-8000-000000000007");
    // The session being typed in comes last, however well it matches.
    let current = Some("C8000000-0000-4000-8000-000000000008");
    let got = c.complete(&a.sessions(), &a.meta_dir(), "/p", current, "cront", 10);
    assert_eq!(got.len(), 1);
    let got = c.complete(&a.sessions(), &a.meta_dir(), "/p", current, "", 10);
    assert_eq!(
        got.last().map(|x| x.id.as_str()),
        Some("c8000000-0000-4000-8000-000000000008")
    );
    assert_ne!(got[0].id, "c8000000-0000-4000-8000-000000000008");
}
