//! The offline model on conversations shaped like real sessions.

use super::*;
use crate::session::{AgentMessage, Block, BoundedText};

fn user(text: &str) -> (Role, String) {
    (Role::User, text.to_string())
}

fn assistant(text: &str) -> (Role, String) {
    (Role::Assistant, text.to_string())
}

/// A branch of alternating messages, as `summarize` reads it.
fn branch(messages: &[(Role, String)]) -> Vec<Entry> {
    let entry = |i: usize, (role, text): &(Role, String)| Entry {
        id: format!("e{i}").into(),
        parent_id: None,
        timestamp: 0,
        kind: EntryKind::Message(match role {
            Role::User => AgentMessage::User {
                content: [Block::Text(BoundedText::whole(&**text))].into(),
                timestamp: 0,
            },
            Role::Assistant => AgentMessage::Assistant {
                content: [Block::Text(BoundedText::whole(&**text))].into(),
                error_message: None,
                timestamp: 0,
            },
        }),
    };
    messages
        .iter()
        .enumerate()
        .map(|(i, m)| entry(i, m))
        .collect()
}

fn index(messages: &[(Role, String)], files: &FilesTouched) -> IndexSummary {
    let entries = branch(messages);
    let refs: Vec<&Entry> = entries.iter().collect();
    summarize(&ExtractiveInput {
        branch: &refs,
        session_name: None,
        cwd: "/home/u/gitclaw",
        files,
    })
}

#[test]
fn a_name_says_what_the_session_did_not_how_it_opened() {
    // The opening question is off topic: the name comes from the terms the
    // user kept using and the file the session wrote.
    let messages = [
        user("Why is the sky blue?"),
        assistant("Rayleigh scattering."),
        user("Let's think about runaway cost controls for agents: a budget per run."),
        assistant("A cost budget per run stops runaway loops; cost controls need a hard cap."),
        user("Write the runaway cost controls idea into THE-IDEA.md"),
        assistant("Written THE-IDEA.md with the cost controls."),
    ];
    let files = FilesTouched {
        read: vec![],
        modified: vec!["docs/THE-IDEA.md".into()],
    };
    let name = index(&messages, &files).name;
    assert!(
        name.starts_with("Cost, runaway, controls") || name.contains("cost"),
        "{name}"
    );
    assert!(name.ends_with(": THE-IDEA.md"), "{name}");
    assert!(!name.to_lowercase().contains("sky"), "{name}");
    assert!(name.split_whitespace().count() <= 8, "{name}");
}

#[test]
fn an_on_topic_request_names_the_session_in_the_users_words() {
    let messages = [
        user("Please add a token bucket rate limiter to the API gateway now"),
        assistant("Added a token bucket limiter in src/limiter.rs for the gateway."),
    ];
    let files = FilesTouched {
        read: vec![],
        modified: vec!["src/limiter.rs".into()],
    };
    assert_eq!(
        index(&messages, &files).name,
        "Add a token bucket rate limiter: limiter.rs"
    );
    // A greeting is not the request; a session of greetings keeps its words.
    let hello = [
        user("Hello!"),
        assistant("Hi."),
        user("can you fix the login form validation"),
        assistant("Fixed."),
    ];
    assert_eq!(
        index(&hello, &FilesTouched::default()).name,
        "Fix the login form validation"
    );
    assert_eq!(
        index(&[user("Hail")], &FilesTouched::default()).name,
        "Hail in gitclaw"
    );
}

#[test]
fn references_never_reach_names_summaries_or_tags() {
    let messages = [
        user("check `@@cron-in-gitclaw` and continue from @@034d1cd7 on the cron scheduler"),
        assistant("The cron scheduler now runs jobs; see @@other-session."),
    ];
    let out = index(&messages, &FilesTouched::default());
    let all = serde_json::to_string(&out).unwrap();
    assert!(!all.contains("@@"), "{all}");
    assert!(
        !out.tags
            .iter()
            .any(|t| t.contains("034d1") || t.contains("cron-in-gitclaw")),
        "{:?}",
        out.tags
    );
    assert_eq!(out.name, "Check and continue on the cron scheduler");
}

#[test]
fn decisions_are_found_as_people_state_them() {
    let messages = [
        user("Let's go with SQLite for the search index."),
        assistant("I'll use FTS5 because it ships with rusqlite's bundled feature."),
        user("good, do it"),
        assistant("I'll use a thread pool because it is faster."),
        user("No, keep it single-threaded."),
        user("Use Paddle instead of Stripe."),
        assistant("Decided: WAL mode with a busy timeout. Instead of polling, the assistant explains things."),
        assistant("Reply: I looked at your request ('Let's go with SQLite for the search index.')."),
    ];
    let found = decisions(&messages);
    assert_eq!(
        found,
        [
            "Let's go with SQLite for the search index.",
            "I'll use FTS5 because it ships with rusqlite's bundled feature.",
            "Use Paddle instead of Stripe.",
            "Decided: WAL mode with a busy timeout.",
        ]
    );
}

#[test]
fn next_steps_are_open_items_not_narration() {
    let messages = [
        user("Add the retry logic"),
        assistant("Let me check the next file. TODO: cap the backoff at 60 s."),
        assistant("Retries are in. We still need a test for the 429 path. Want me to add it?"),
        user("Also document the config key"),
    ];
    assert_eq!(
        open_tasks(&messages),
        [
            "TODO: cap the backoff at 60 s.",
            "We still need a test for the 429 path.",
            "Want me to add it?",
            "Also document the config key"
        ]
    );
}

#[test]
fn taken_names_get_the_distinguishing_topic_then_the_date() {
    let taken = vec![
        "Fix login in shop".to_string(),
        "fix login in shop, oauth".to_string(),
    ];
    let topics = vec![
        "login".to_string(),
        "oauth".to_string(),
        "cookies".to_string(),
    ];
    assert_eq!(
        distinct_name("Fix login in shop", &taken, &topics, "2026-02-20"),
        "Fix login in shop, cookies"
    );
    assert_eq!(
        distinct_name("Fix login in shop", &taken, &[], "2026-02-20"),
        "Fix login in shop (2026-02-20)"
    );
    assert_eq!(
        distinct_name("Other", &taken, &topics, "2026-02-20"),
        "Other"
    );
    assert_eq!(words_key("Fix  login: in SHOP"), "fix login in shop");
}

#[test]
fn sentences_split_on_terminators_only_before_space() {
    assert_eq!(
        sentences("We decided. Use v1.2 now! ok"),
        vec!["We decided.", "Use v1.2 now!", "ok"]
    );
}

#[test]
fn secrets_in_the_session_never_reach_the_index() {
    let key = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789";
    let entries = [Entry {
        id: "u1".into(),
        parent_id: None,
        timestamp: 0,
        kind: EntryKind::Message(AgentMessage::User {
            content: [Block::Text(BoundedText::whole(format!(
                "Use the key {key} for the deploy script. We decided to use Bearer abcdefgh12345678."
            )))]
            .into(),
            timestamp: 0,
        }),
    }];
    let branch: Vec<&Entry> = entries.iter().collect();
    let files = FilesTouched::default();
    let out = summarize(&ExtractiveInput {
        branch: &branch,
        session_name: None,
        cwd: "/p/demo",
        files: &files,
    });
    let all = serde_json::to_string(&(
        &out.name,
        &out.description,
        &out.summary,
        &out.tags,
        &out.decisions,
    ))
    .unwrap();
    assert!(
        !all.contains("abcdefghijklmnop") && !all.contains("abcdefgh1234"),
        "{all}"
    );
    assert!(all.contains("[REDACTED]"), "{all}");
}

#[test]
fn clip_counts_chars() {
    assert_eq!(clip("ééé", 3, Keep::Head), "ééé");
    assert_eq!(clip("éééé", 3, Keep::Head), "éé…");
}

#[test]
fn a_name_cut_mid_clause_drops_the_half_phrase() {
    let words = |text: &str| phrase(text, 7).join(" ");
    assert_eq!(
        words("Create a report about openclaw in relation to the gateway work"),
        "Create a report about openclaw"
    );
    assert_eq!(
        words("Does pi understand too many requests of API LLM and how"),
        "Does pi understand too many requests"
    );
    assert_eq!(
        words("Fix the flaky gateway test."),
        "Fix the flaky gateway test"
    );
}
