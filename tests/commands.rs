//! The commands of issue 15 through the real cdylib loaded by pi-ext-host
//! over the ABI: `/continue` returns a newSession action (parent link, the
//! redacted context under the byte cap), `/index-all` indexes in the
//! background with n/N progress and never twice, the overview, and the
//! daily spending cap (auto-indexing pauses, commands ask first).

use std::time::Duration;

use crate::support::synth::{Agent, Synth};
use pi_ext_abi::protocol::{
    Action, CommandCall, CommandResult, EventCall, SessionContext, PROTOCOL_VERSION,
};
use pi_ext_host::{PluginInstance, RecordingHost};
use serde_json::{json, Value};

const CWD: &str = "/proj/a";

fn load(agent: &Agent, config: &str) -> (PluginInstance, RecordingHost, SessionContext) {
    let ctx = pi_ext_host::context::bare_context(&agent.dir);
    let ctx = SessionContext {
        cwd: CWD.into(),
        ..ctx
    };
    let (instance, host) = crate::support::plugin::instance(&ctx, config);
    (instance, host, ctx)
}

fn command(
    instance: &PluginInstance,
    ctx: &SessionContext,
    name: &str,
    args: &str,
) -> CommandResult {
    let call = CommandCall {
        v: PROTOCOL_VERSION,
        command: name.into(),
        args: args.into(),
        ctx: ctx.clone(),
    };
    instance.command(&call).expect("command")
}

fn statuses(host: &RecordingHost) -> Vec<String> {
    host.effects()
        .iter()
        .filter(|e| e["type"] == "setStatus")
        .filter_map(|e| e["text"].as_str().map(String::from))
        .collect()
}

const OFFLINE: &str =
    r#"{"modelKeys": [], "offlineFallback": true, "references": {"maxInjectedBytes": 2000}}"#;

#[test]
fn continue_returns_a_new_session_with_the_parent_and_its_redacted_context() {
    let agent = Agent::new();
    let old = agent
        .session(&Synth::new("0c000000-0000-4000-8000-000000000001", CWD).name("Auth refactor"));
    let secret = "sk-proj-Ab3dEfGh1jKlMnOpQrStUvWx";
    let summary = format!("We moved tokens to PASETO. The key {secret} leaked.");
    agent.meta(
        "0c000000-0000-4000-8000-000000000001",
        "Auth refactor",
        "tokens",
        &["auth"],
        &summary,
        &old,
    );
    let long =
        agent.session(&Synth::new("0c000000-0000-4000-8000-000000000002", CWD).name("Long one"));
    let summary = format!(
        "{} The key {secret} leaked at the end.",
        "More detail. ".repeat(400)
    );
    agent.meta(
        "0c000000-0000-4000-8000-000000000002",
        "Long one",
        "long",
        &[],
        &summary,
        &long,
    );
    let (instance, host, ctx) = load(&agent, OFFLINE);

    let result = command(&instance, &ctx, "continue", "@@auth-refactor");
    assert!(result.ok, "{result:?}");
    let [Action::NewSession {
        parent_session,
        message: Some(message),
    }] = result.actions.as_slice()
    else {
        panic!("one newSession action: {:?}", result.actions)
    };
    assert_eq!(parent_session.as_deref(), Some(old.to_str().unwrap()));
    assert_eq!(message.custom_type, "session-continuation");
    assert!(message.display);
    assert!(
        message.content.contains("We moved tokens to PASETO"),
        "{}",
        message.content
    );
    assert!(
        message.content.contains("files modified: src/b.rs"),
        "files are carried"
    );
    assert!(
        !message.content.contains("Ab3dEfGh1jKlMnOp"),
        "the secret is redacted"
    );
    assert_eq!(message.details["truncated"], false);
    let long = command(
        &instance,
        &ctx,
        "continue",
        "0c000000-0000-4000-8000-000000000002",
    );
    let [Action::NewSession {
        message: Some(message),
        ..
    }] = long.actions.as_slice()
    else {
        panic!("{long:?}")
    };
    assert!(
        message.content.len() <= 2000,
        "within references.maxInjectedBytes: {}",
        message.content.len()
    );
    assert_eq!(message.details["truncated"], true);

    let miss = command(&instance, &ctx, "continue", "@@no-such-session");
    assert!(!miss.ok && miss.actions.is_empty());
    assert!(miss.message.unwrap().contains("no session matches"));
    let usage = command(&instance, &ctx, "continue", "");
    assert!(usage.message.unwrap().starts_with("usage: /continue"));

    // A 1.0 bridge lists no actions: the command says so instead of returning one it would drop.
    let old_bridge = SessionContext {
        actions: Vec::new(),
        ..ctx.clone()
    };
    let refused = command(&instance, &old_bridge, "continue", "@@auth-refactor");
    assert!(!refused.ok && refused.actions.is_empty());
    assert!(refused.message.unwrap().contains("pi-ext-abi 1.1"));
    assert!(host
        .effects()
        .iter()
        .any(|e| e["type"] == "notify" && e["level"] == "error"));
}

#[test]
fn index_all_indexes_what_lacks_a_meta_with_progress_and_never_twice() {
    let agent = Agent::new();
    for n in 1..=3 {
        agent.session(
            &Synth::new(&format!("0d000000-0000-4000-8000-00000000000{n}"), CWD)
                .user(&["Add caching"]),
        );
    }
    agent.session(&Synth::new(
        "0d000000-0000-4000-8000-000000000009",
        "/proj/other",
    ));
    let (instance, host, ctx) = load(&agent, OFFLINE);

    let started = command(&instance, &ctx, "index-all", "");
    assert!(started.ok, "{started:?}");
    assert!(started
        .message
        .unwrap()
        .starts_with("Indexing 3 of 3 sessions of this project"));
    assert!(instance.flush(Duration::from_secs(60)).idle);
    for n in 1..=3 {
        assert!(agent
            .meta_dir()
            .join(format!("0d000000-0000-4000-8000-00000000000{n}.meta.json"))
            .is_file());
    }
    assert!(
        !agent
            .meta_dir()
            .join("0d000000-0000-4000-8000-000000000009.meta.json")
            .exists(),
        "other project"
    );
    let shown = statuses(&host);
    for n in 1..=3 {
        assert!(shown.contains(&format!("indexing {n}/3")), "{shown:?}");
    }
    assert!(
        shown.iter().any(|s| s == "bulk indexing: 3/3 indexed"),
        "{shown:?}"
    );
    assert!(
        !host
            .effects()
            .iter()
            .any(|e| e["type"] == "appendEntry" || e["type"] == "setSessionName"),
        "other sessions' entries and names are never written into the current one"
    );

    let again = command(&instance, &ctx, "index-all", "");
    assert_eq!(
        again.message.as_deref(),
        Some("All 3 sessions of this project have an up-to-date meta")
    );
    let all = command(&instance, &ctx, "index-all", "--all");
    assert!(all
        .message
        .unwrap()
        .starts_with("Indexing 1 of 4 sessions of every project"));
    assert!(instance.flush(Duration::from_secs(60)).idle);
    assert!(agent
        .meta_dir()
        .join("0d000000-0000-4000-8000-000000000009.meta.json")
        .is_file());
    assert!(!command(&instance, &ctx, "index-all", "--bogus").ok);
    assert_eq!(
        command(&instance, &ctx, "index-all", "--cancel")
            .message
            .as_deref(),
        Some("No bulk indexing is running")
    );
}

#[test]
fn the_overview_shows_counts_model_money_problems_and_the_syntax() {
    let agent = Agent::new();
    let a = agent.session(&Synth::new("0e000000-0000-4000-8000-000000000001", CWD));
    agent.session(&Synth::new("0e000000-0000-4000-8000-000000000002", CWD));
    agent.meta(
        "0e000000-0000-4000-8000-000000000001",
        "A",
        "d",
        &[],
        "s",
        &a,
    );
    session_index::model::spend::add(
        &agent.meta_dir(),
        session_index::model::spend::Kind::Indexing,
        0.5,
    )
    .unwrap();
    let (instance, _host, ctx) = load(&agent, r#"{"spending": {"dailyCapUsd": 2}}"#);
    let result = command(&instance, &ctx, "session-index", "");
    let text = result.message.unwrap();
    assert!(
        text.starts_with(&format!("session-index {} — ok", env!("CARGO_PKG_VERSION"))),
        "{text}"
    );
    assert!(
        text.contains("Sessions: 2 in all, 1 indexed, 0 stale, 1 without meta"),
        "{text}"
    );
    assert!(
        text.contains(
            "Model: the first of anthropic/claude-haiku-4-5, openai/gpt-4.1-mini, google/gemini-2.5-flash \
             that has credentials (anthropic/claude-haiku-4-5: at most $0.0203 a session, 12800 input + \
             1500 output tokens); with none, the offline model (free; modelFallback: offline)"
        ),
        "what would be used before anything ran, and why: {text}"
    );
    assert!(
        text.contains("Last index: local/extractive (reason not recorded) at "),
        "{text}"
    );
    assert!(
        text.contains("/sessions <words> (search)"),
        "every command: {text}"
    );
    assert!(
        text.contains(
            "today $0.5000 (cap $2.00/day); all time $0.5000 (indexing $0.5000, queries $0.0000)"
        ),
        "{text}"
    );
    assert!(
        text.contains("@@auth-refactor~1") && text.contains("/continue <@@ref>"),
        "{text}"
    );
    assert_eq!(result.details["spentUsd"]["allTime"], 0.5);
    // No sentence model in the agent dir: the overview says how to get one.
    assert!(
        text.contains(
            "Semantic search: off, the model is not installed; `session-index model install` \
             turns it on"
        ),
        "{text}"
    );
    assert_eq!(result.details["semanticSearch"], false);
    let (off, _, _) = load(&agent, r#"{"search": {"semantic": false}}"#);
    let text = command(&off, &ctx, "session-index", "").message.unwrap();
    assert!(
        text.contains("Semantic search: off (search.semantic is false in the config)"),
        "{text}"
    );

    let (broken, _, _) = load(&agent, r#"{"minNewUserMessages": 0}"#);
    let text = command(&broken, &ctx, "session-index", "").message.unwrap();
    assert!(
        text.contains("— ok")
            && text
                .contains("Config problems: minNewUserMessages: lower than 1; its default applies"),
        "{text}"
    );
    let (broken, _, _) = load(&agent, r#"{"privacy": {"exclude": [""]}}"#);
    let text = command(&broken, &ctx, "session-index", "").message.unwrap();
    assert!(
        text.contains("config invalid") && text.contains("Config problems: privacy.exclude[0]"),
        "{text}"
    );
}

#[test]
fn past_the_daily_cap_auto_indexing_pauses_once_and_commands_ask_first() {
    let agent = Agent::new();
    let file = agent
        .session(&Synth::new("0f000000-0000-4000-8000-000000000001", CWD).user(&["a", "b", "c"]));
    session_index::model::spend::add(
        &agent.meta_dir(),
        session_index::model::spend::Kind::Queries,
        1.5,
    )
    .unwrap();
    let config = r#"{"modelKeys": [], "minNewUserMessages": 1, "spending": {"dailyCapUsd": 1}}"#;
    let (instance, host, _) = load(&agent, config);
    let ctx = pi_ext_host::session_context(&file, None, &agent.dir, None).unwrap();
    for _ in 0..2 {
        let call = EventCall {
            v: PROTOCOL_VERSION,
            event: "agent_end".into(),
            payload: json!({}),
            ctx: ctx.clone(),
        };
        assert_eq!(instance.event(&call).unwrap(), Value::Null);
    }
    assert!(instance.flush(Duration::from_secs(30)).idle);
    assert!(
        !agent
            .meta_dir()
            .join("0f000000-0000-4000-8000-000000000001.meta.json")
            .exists(),
        "paused"
    );
    let notices: Vec<Value> = host
        .effects()
        .into_iter()
        .filter(|e| e["type"] == "notify")
        .collect();
    assert_eq!(notices.len(), 1, "one notice: {notices:?}");
    assert!(notices[0]["text"]
        .as_str()
        .unwrap()
        .contains("automatic indexing is paused"));

    for (name, args) in [("index-session", ""), ("index-all", "--all")] {
        let asked = command(&instance, &ctx, name, args);
        let [Action::Select { options, .. }] = asked.actions.as_slice() else {
            panic!("{asked:?}")
        };
        assert_eq!(
            options[0].actions,
            vec![Action::Command {
                command: name.into(),
                args: format!("{args} --over-cap")
            }]
        );
        assert!(options[1].actions.is_empty(), "cancel does nothing");
    }
    let forced = command(&instance, &ctx, "index-session", " --over-cap");
    assert!(forced.ok, "{forced:?}");
    assert!(agent
        .meta_dir()
        .join("0f000000-0000-4000-8000-000000000001.meta.json")
        .is_file());
}

#[test]
fn sessions_searches_and_offers_resume_mention_and_continue() {
    let agent = Agent::new();
    let hit = agent.session(
        &Synth::new("0c000000-0000-4000-8000-000000000011", CWD)
            .name("Marmoset migration")
            .user(&["move the marmoset tables to postgres"]),
    );
    agent.session(
        &Synth::new("0c000000-0000-4000-8000-000000000012", "/proj/b")
            .user(&["fix the login page"]),
    );
    let (instance, _host, ctx) = load(&agent, OFFLINE);

    let result = command(&instance, &ctx, "sessions", "marmoset postgres");
    assert!(result.ok, "{result:?}");
    assert_eq!(
        result.message.as_deref(),
        Some("1 session matches \"marmoset postgres\"")
    );
    let [Action::Select { title, options }] = result.actions.as_slice() else {
        panic!("one select: {result:?}")
    };
    assert!(title.contains("marmoset postgres"), "{title}");
    let [option] = options.as_slice() else {
        panic!("one result: {options:?}")
    };
    assert!(
        option.label.starts_with("1. Marmoset migration · "),
        "{}",
        option.label
    );
    assert!(
        option.label.contains(CWD) && option.label.contains("*marmoset* tables to *postgres*"),
        "{}",
        option.label
    );
    let [Action::Select {
        options: choices, ..
    }] = option.actions.as_slice()
    else {
        panic!("{option:?}")
    };
    let actions: Vec<&Action> = choices.iter().flat_map(|c| &c.actions).collect();
    assert_eq!(
        actions,
        [
            &Action::SwitchSession {
                session_file: hit.to_string_lossy().into_owned()
            },
            &Action::InsertText {
                text: "@@marmoset-migration ".into()
            },
            &Action::Command {
                command: "continue".into(),
                args: "@@marmoset-migration".into()
            },
        ]
    );
    assert_eq!(
        result.details["results"][0]["id"],
        "0c000000-0000-4000-8000-000000000011"
    );

    // A host that performs no actions gets the results as text.
    let bare = SessionContext {
        actions: Vec::new(),
        ..ctx.clone()
    };
    let text = command(&instance, &bare, "sessions", "marmoset");
    assert!(text.ok && text.actions.is_empty(), "{text:?}");
    let message = text.message.unwrap();
    assert!(
        message.starts_with("1 session matches \"marmoset\"\n1. Marmoset migration · "),
        "{message}"
    );

    let none = command(&instance, &ctx, "sessions", "zebra");
    assert!(
        none.ok && none.actions.is_empty() && none.message.unwrap().contains("no session matches")
    );
    let usage = command(&instance, &ctx, "sessions", " ");
    assert!(!usage.ok && usage.message.unwrap().starts_with("usage: /sessions"));
}

#[test]
fn bulk_indexing_with_a_paid_model_shows_the_estimate_and_asks_first() {
    let agent = Agent::new();
    for n in 1..=2 {
        agent.session(
            &Synth::new(&format!("0a100000-0000-4000-8000-00000000000{n}"), CWD)
                .user(&["Add caching to the gateway"]),
        );
    }
    // A key for the model's provider, as pi keeps it: this model would be paid for.
    std::fs::write(
        agent.dir.join("auth.json"),
        r#"{"openai": {"type": "api_key", "key": "sk-test-not-used"}}"#,
    )
    .unwrap();
    let config = r#"{"modelKeys": ["openai/gpt-4.1-mini"], "useHostModels": false}"#;
    // The search store up to date first: /index-all counts what the store
    // holds, and a loaded machine can take longer than the command's update
    // budget (1 s) to bring in even two new sessions.
    drop(crate::support::search::store_updated(&agent.dir, None));
    let (instance, _host, ctx) = load(&agent, config);
    let asked = command(&instance, &ctx, "index-all", "");
    let [Action::Select { title, options }] = asked.actions.as_slice() else {
        panic!("{asked:?}")
    };
    assert!(
        title.starts_with("session-index: index 2 sessions, about ")
            && title.contains(" input tokens with openai/gpt-4.1-mini: at most $0.00"),
        "{title}"
    );
    let labels: Vec<&str> = options.iter().map(|o| o.label.as_str()).collect();
    assert_eq!(
        labels,
        [
            "Index with openai/gpt-4.1-mini",
            "Index with the offline model (free)",
            "Cancel"
        ]
    );
    let again = |args: &str| Action::Command {
        command: "index-all".into(),
        args: args.into(),
    };
    assert_eq!(options[0].actions, [again(" --yes")]);
    assert_eq!(options[1].actions, [again(" --offline")]);
    assert!(options[2].actions.is_empty());
    let written: Vec<_> = std::fs::read_dir(agent.meta_dir())
        .into_iter()
        .flatten()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".meta.json"))
        .collect();
    assert!(
        written.is_empty(),
        "nothing indexed before the answer: {written:?}"
    );

    let offline = command(&instance, &ctx, "index-all", " --offline");
    assert!(offline.message.unwrap().starts_with("Indexing 2 of 2"));
    assert!(instance.flush(Duration::from_secs(60)).idle);
    let meta: Value = serde_json::from_slice(
        &std::fs::read(
            agent
                .meta_dir()
                .join("0a100000-0000-4000-8000-000000000001.meta.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(meta["model"], "local/extractive");

    // Where no one can pick, nothing is spent and the notice says how to go on.
    let no_ui = SessionContext {
        actions: Vec::new(),
        ..ctx.clone()
    };
    std::fs::remove_dir_all(agent.meta_dir()).unwrap();
    let refused = command(&instance, &no_ui, "index-all", "");
    assert!(!refused.ok);
    assert!(refused
        .message
        .unwrap()
        .contains("not indexing without asking (2 sessions, about "),);
}
