//! Issue 18, references: on copies of the real pi sessions of the shared
//! fixtures, with new sessions that name them and sessions that only mention
//! them. A mention never makes a match, id-like references match ids only,
//! fuzzy text resolves only a clear leader, misses suggest only close names,
//! and pi is told what each reference became.

use crate::support::synth::{notifications, prompt, Agent, Synth};
use session_index::resolve::{short_id, Catalog, ResolveError, Resolved, Rule};

/// The project of the real fixtures.
const GITCLAW: &str = "/home/runner/work/gitclaw/gitclaw";
const CRON: &str = "034d1cd7-5e1f-4a2b-9c3d-00000000c40e";
/// Fresh sessions of the project that only mention the cron session.
const MENTIONS: [&str; 2] = [
    "7a000000-0000-4000-8000-000000000001",
    "7a000000-0000-4000-8000-000000000002",
];
/// The session the prompts are typed in.
const HERE: &str = "7a000000-0000-4000-8000-000000000003";

fn agent() -> Agent {
    let a = Agent::new();
    let real = std::fs::read_dir(crate::support::synth::fixture("real")).expect("real fixtures");
    for f in real.flatten() {
        a.copy_fixture(&format!("real/{}", f.file_name().to_string_lossy()));
    }
    a.session(
        &Synth::new(CRON, GITCLAW)
            .name("Cron in gitclaw")
            .user(&["Run the gitclaw agent every night from a scheduled workflow"]),
    );
    a.session(&Synth::new(MENTIONS[0], GITCLAW).user(&["check @@cron-in-gitclaw"]));
    a.session(&Synth::new(MENTIONS[1], GITCLAW).user(&["look at @@034d1cd7 and `@@cron` again"]));
    a.session(&Synth::new(HERE, GITCLAW).user(&["what did we decide about @@cron?"]));
    a
}

fn resolve(c: &Catalog, a: &Agent, r: &str) -> Result<Resolved, ResolveError> {
    c.resolve_in_session(&a.sessions(), &a.meta_dir(), GITCLAW, Some(HERE), r)
}

fn ids_of(err: &ResolveError) -> Vec<String> {
    match err {
        ResolveError::Ambiguous { candidates, .. } => {
            candidates.iter().map(|c| c.id.clone()).collect()
        }
        ResolveError::NotFound { suggestions, .. } => {
            suggestions.iter().map(|c| short_id(&c.id)).collect()
        }
        _ => Vec::new(),
    }
}

#[test]
fn a_session_that_mentions_a_reference_is_not_named_by_it() {
    let a = agent();
    // Indexed, with the mention in its meta name, description and tags too.
    let id = "7a000000-0000-4000-8000-000000000004";
    let p =
        a.session(&Synth::new(id, GITCLAW).user(&["see @@\"Cron in gitclaw\": what runs when?"]));
    a.meta(
        id,
        "Follow-up of @@cron",
        "Follow-up of @@cron-in-gitclaw",
        &["@@cron", "followup"],
        "",
        &p,
    );
    let c = Catalog::new();
    for r in [
        "cron",
        "cron in gitclaw",
        "cron-in-gitclaw",
        "Cron in gitclw",
    ] {
        let found = resolve(&c, &a, r).unwrap_or_else(|e| panic!("{r}: {e}"));
        assert_eq!(found.entry.id, CRON, "{r}");
    }
    assert_eq!(resolve(&c, &a, "cron-in-gitclaw").unwrap().rule, Rule::Slug);
    assert_eq!(resolve(&c, &a, "cron").unwrap().rule, Rule::Fuzzy);
    // The named session is ahead of the real sessions that merely say
    // "gitclaw" in their first message, and the mentions are nowhere.
    let gitclaw = resolve(&c, &a, "gitclaw");
    assert_eq!(gitclaw.unwrap().entry.id, CRON);
    // The mentions' own words still find them.
    assert_eq!(resolve(&c, &a, "look again").unwrap().entry.id, MENTIONS[1]);
    assert_eq!(resolve(&c, &a, "follow-up").unwrap().entry.id, id);
}

#[test]
fn id_like_references_match_ids_only() {
    let a = agent();
    // A session whose text holds the digits: never a match for an id.
    a.session(
        &Synth::new("9b000000-0000-4000-8000-000000000001", GITCLAW).name("Build 034d1 notes"),
    );
    let c = Catalog::new();
    let miss = resolve(&c, &a, "034d1").unwrap_err();
    assert!(matches!(miss, ResolveError::NotFound { .. }), "{miss}");
    assert_eq!(
        miss.to_string(),
        "no session matches \"034d1\"; did you mean 034d1cd7… \"Cron in gitclaw\"?"
    );
    for (r, rule) in [
        ("034d1c", Rule::Prefix),
        ("034D1CD7-5E1F", Rule::Prefix),
        (CRON, Rule::Id),
    ] {
        let found = resolve(&c, &a, r).unwrap_or_else(|e| panic!("{r}: {e}"));
        assert_eq!((found.entry.id.as_str(), found.rule), (CRON, rule), "{r}");
    }
    // Real ids: unique prefixes of six and more resolve, shorter ones suggest.
    assert_eq!(
        resolve(&c, &a, "0f8643").unwrap().entry.id,
        "0f864356-8ed9-4e63-bc61-a364afe414a8"
    );
    assert_eq!(
        resolve(&c, &a, "FD67CEB3-8AFA").unwrap().entry.id,
        "fd67ceb3-8afa-47d5-853e-c1ceedcecfb8"
    );
    let short = resolve(&c, &a, "0f86").unwrap_err();
    assert_eq!(ids_of(&short), vec!["0f864356…"], "{short}");
    // A fragment from inside an id names the id it is part of.
    let inner = resolve(&c, &a, "8afa-47d5").unwrap_err();
    assert_eq!(ids_of(&inner), vec!["fd67ceb3…"], "{inner}");
    // Not unique: an ambiguity naming every matching id, even with one of
    // them in the current project.
    a.session(&Synth::new("0f864356-0000-4000-8000-000000000009", "/elsewhere").name("Twin id"));
    let shared = resolve(&c, &a, "0f864356").unwrap_err();
    let text = shared.to_string();
    assert!(matches!(shared, ResolveError::Ambiguous { .. }), "{text}");
    assert!(
        text.contains("0f864356-8ed9-4e63-bc61-a364afe414a8")
            && text.contains("0f864356-0000-4000"),
        "{text}"
    );
}

#[test]
fn fuzzy_text_resolves_only_a_clear_leader() {
    let a = agent();
    a.session(
        &Synth::new("5a000000-0000-4000-8000-000000000001", GITCLAW).name("Rate limiter design"),
    );
    a.session(
        &Synth::new("5a000000-0000-4000-8000-000000000002", GITCLAW).name("Rate limiter design v2"),
    );
    let c = Catalog::new();
    // Exact names and slugs tell near-duplicates apart.
    assert_eq!(
        resolve(&c, &a, "rate-limiter-design").unwrap().entry.id,
        "5a000000-0000-4000-8000-000000000001"
    );
    assert_eq!(
        resolve(&c, &a, "Rate limiter design v2").unwrap().entry.id,
        "5a000000-0000-4000-8000-000000000002"
    );
    // Fuzzy text that fits both equally well lists both.
    for r in ["rate limiter", "ratelimiter dsign"] {
        let err = resolve(&c, &a, r).unwrap_err();
        let mut ids = ids_of(&err);
        ids.sort();
        assert_eq!(
            ids,
            [
                "5a000000-0000-4000-8000-000000000001",
                "5a000000-0000-4000-8000-000000000002"
            ],
            "{r}: {err}"
        );
    }
    // One clearly ahead resolves: the version only one of them has.
    assert_eq!(
        resolve(&c, &a, "limiter v2").unwrap().entry.id,
        "5a000000-0000-4000-8000-000000000002"
    );
    // The session the prompt is typed in is never a fuzzy candidate.
    let typed_in_cron =
        c.resolve_in_session(&a.sessions(), &a.meta_dir(), GITCLAW, Some(CRON), "cron");
    assert!(
        matches!(typed_in_cron, Err(ResolveError::NotFound { .. })),
        "{typed_in_cron:?}"
    );
}

#[test]
fn misses_suggest_only_close_names() {
    let a = agent();
    a.session(&Synth::new("6a000000-0000-4000-8000-000000000001", GITCLAW).name("Payment service"));
    let c = Catalog::new();
    for r in ["nothing-like-this", "nope-nothing", "zzz-qqq"] {
        let err = resolve(&c, &a, r).unwrap_err();
        assert!(
            matches!(&err, ResolveError::NotFound { suggestions, .. } if suggestions.is_empty()),
            "{r}: {err}"
        );
        assert!(!err.to_string().contains("did you mean"), "{err}");
    }
    let err = resolve(&c, &a, "payment-gateway").unwrap_err();
    assert_eq!(ids_of(&err), vec!["6a000000…"], "{err}");
    assert!(
        err.to_string().contains("6a000000… \"Payment service\""),
        "{err}"
    );
}

#[test]
fn every_resolved_reference_is_confirmed_in_pi_and_details_say_the_rule() {
    let a = agent();
    let home = std::env::var("HOME").unwrap_or_default();
    let project = format!("{}/work/gitclaw", home.trim_end_matches('/'));
    a.session(&Synth::new("8a000000-0000-4000-8000-000000000001", &project).name("Nightly deploy"));
    let text = "@@cron, @@\"Cron in gitclaw\", @@0f8643, @@nightly-deploy and @@nothing-like-this";
    let (result, rec) = prompt(
        &a,
        r#"{"references":{"maxRefsPerPrompt":6}}"#,
        GITCLAW,
        text,
    );
    let notes = notifications(&rec);
    let m = &result["message"];
    assert_eq!(m["display"], false);
    let rules: Vec<(&str, &str)> = m["details"]["resolved"]
        .as_array()
        .expect("details.resolved")
        .iter()
        .map(|r| {
            (
                r["reference"].as_str().unwrap_or_default(),
                r["rule"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        rules,
        [
            ("@@cron", "fuzzy"),
            ("@@\"Cron in gitclaw\"", "name"),
            ("@@0f8643", "prefix"),
            ("@@nightly-deploy", "slug")
        ]
    );
    // The same session twice: injected once, confirmed for each reference.
    assert_eq!(m["details"]["sessionIds"].as_array().map(Vec::len), Some(3));
    // Every reference of the prompt in one notice, a line each, the unresolved one too.
    assert_eq!(notes.len(), 1, "one notice: {notes:#?}");
    let lines: Vec<&str> = notes[0].lines().collect();
    let title = "Compare my japer-technology/gitclaw to the orginal forked…";
    assert_eq!(
        lines,
        [
            format!("@@cron → \"Cron in gitclaw\" (034d1cd7, 2026-02-20, {GITCLAW}, via fuzzy)"),
            format!("@@\"Cron in gitclaw\" → \"Cron in gitclaw\" (034d1cd7, 2026-02-20, {GITCLAW}, via name)"),
            format!("@@0f8643 → \"{title}\" (0f864356, 2026-02-20, {GITCLAW}, via prefix)"),
            "@@nightly-deploy → \"Nightly deploy\" (8a000000, 2026-02-20, ~/work/gitclaw, via slug)".to_string(),
            "@@nothing-like-this: not injected: no session matches \"nothing-like-this\"".to_string(),
        ],
        "{notes:#?}"
    );
}

#[test]
fn the_search_rule_resolves_only_a_clear_leader() {
    let a = agent();
    // Words no name, slug or first message holds: only the sessions' text.
    let [sched, fork1, fork2] = [
        "5e000000-0000-4000-8000-000000000001",
        "5e000000-0000-4000-8000-000000000002",
        "5e000000-0000-4000-8000-000000000003",
    ];
    a.session(&Synth::new(sched, GITCLAW).user(&["hello", "the quokka schedule runs at noon"]));
    a.session(&Synth::new(fork1, GITCLAW).user(&["hello", "a quokka fork of the repository"]));
    a.session(&Synth::new(fork2, GITCLAW).user(&["hello", "a quokka fork of the repository"]));
    let c = Catalog::new().with_search(true);
    let found = resolve(&c, &a, "quokka schedule").unwrap();
    assert_eq!((found.entry.id.as_str(), found.rule), (sched, Rule::Search));
    let mut close = ids_of(&resolve(&c, &a, "quokka fork").unwrap_err());
    close.sort();
    assert_eq!(close, vec![fork1, fork2]);
    // Rules before it win; the words must be together; without it, a miss.
    assert_eq!(resolve(&c, &a, "cron-in-gitclaw").unwrap().rule, Rule::Slug);
    assert!(resolve(&c, &a, "schedule quokka").is_err());
    assert!(resolve(&Catalog::new(), &a, "quokka schedule").is_err());
}

#[test]
fn a_word_of_a_name_outranks_the_same_word_in_another_sessions_first_message() {
    // Issue 25: "@@explore" resolved to the current project's one-liner that
    // merely says "(explore)", not to the session named for exploring.
    let a = Agent::new();
    let named = "9e000000-0000-4000-8000-000000000001";
    a.session(
        &Synth::new(named, "/work/other")
            .name("Explore how the AI agent can get credentials")
            .user(&["How can the agent get credentials?"]),
    );
    a.session(
        &Synth::new("9e000000-0000-4000-8000-000000000002", "/work/here").user(&["(explore)"]),
    );
    a.session(
        &Synth::new("9e000000-0000-4000-8000-000000000003", "/work/here")
            .user(&["Let us explore the parser and its tests"]),
    );
    let c = Catalog::new();
    let found = c
        .resolve(&a.sessions(), &a.meta_dir(), "/work/here", "explore")
        .unwrap();
    assert_eq!(found.entry.id, named);
    assert_eq!(found.rule, Rule::Fuzzy);
    // Between matches of the same kind the current project still wins.
    a.session(
        &Synth::new("9e000000-0000-4000-8000-000000000004", "/work/here")
            .name("Explore the plugin API"),
    );
    let found = c
        .resolve(&a.sessions(), &a.meta_dir(), "/work/here", "explore")
        .unwrap();
    assert_eq!(found.entry.id, "9e000000-0000-4000-8000-000000000004");
}
