//! Issue 13's acceptance test: a corpus of planted secrets (every format the
//! issue names, in user text, assistant text, tool calls and tool results,
//! plus `<private>` spans and key blocks placed where a cut-first pipeline
//! would keep only their bodies) pushed through every path that turns session
//! text into model text. Nothing planted may reach the logging mock provider
//! or the injected `@@` message.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::support::mock_provider::{MockProvider, Reply, Wire};
use crate::support::synth::Agent;
use serde_json::{json, Value};
use session_index::features::summarize::{index_session, IndexOutcome, IndexRequest};
use session_index::plugin::state::Services;

const ID: &str = "5ec2e75e-0000-4000-8000-000000000013";
const CWD: &str = "/work/leaky";

/// One planted secret: the text as written and the fragments that must never be seen.
struct Planted {
    text: String,
    fragments: Vec<String>,
}

fn plant(text: &str, fragments: &[&str]) -> Planted {
    Planted {
        text: text.to_string(),
        fragments: fragments.iter().map(|f| f.to_string()).collect(),
    }
}

/// A private key block with a body of `lines` distinct base64 lines; its body lines are its fragments.
fn key_block(kind: &str, seed: u64, lines: usize) -> Planted {
    let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut x = seed;
    let body: Vec<String> = (0..lines)
        .map(|_| {
            (0..64)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    alphabet[(x % 64) as usize] as char
                })
                .collect()
        })
        .collect();
    let text = format!(
        "-----BEGIN {kind}-----\n{}\n-----END {kind}-----",
        body.join("\n")
    );
    Planted {
        fragments: body,
        text,
    }
}

/// The corpus, by where it is planted.
struct Corpus {
    user: Vec<Planted>,
    assistant: Vec<Planted>,
    tool_call: Vec<Planted>,
    tool_result: Vec<Planted>,
    /// Last user message: a key whose BEGIN line falls outside an index tail cut.
    last_user: Planted,
    /// Last assistant text: a key whose BEGIN line falls outside the `@@` extract's tail.
    last_assistant: Planted,
}

fn corpus() -> Corpus {
    Corpus {
        user: vec![
            plant("SECRET_KEY=Hq7vT2pLx9", &["Hq7vT2pLx9"]),
            plant("JWT_SIGNING_KEY=Jw4sK8mQz1", &["Jw4sK8mQz1"]),
            plant("DB_PASS=Pq3wEr5tY", &["Pq3wEr5tY"]),
            plant("GPG_PASSPHRASE=lemon-tractor-42", &["lemon-tractor-42", "tractor"]),
            plant(r#"DB_PASSWORD="purple monkey dishwasher""#, &["purple", "monkey", "dishwasher"]),
            plant("APP_TOKEN=zz&yy;xx@ww", &["zz&yy", "xx@ww"]),
            plant("STRIPE_WEBHOOK_SECRET=whsec_Wb7Kq2Lm9Xp4Rt6Vz8Nc3Hd5", &["Wb7Kq2Lm9Xp4Rt6Vz8Nc3Hd5"]),
            plant("here <private>my IBAN is DE89370400440532013000</private> ok", &["DE89370400440532013000", "my IBAN is"]),
            plant("pasted OPENAI_API_KEY=sk-proj-Rk9Tq2Wm5Zx8Lp3Vn6Bc1Hs4", &["Rk9Tq2Wm5Zx8Lp3Vn6Bc1Hs4"]),
        ],
        assistant: vec![
            plant("Connect with redis://:R3disPw77@cache.internal:6379/0", &["R3disPw77"]),
            plant("The storage string is DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=Qz8Vb2Nx7Lk4Jh6Gf3Ds1Ap9Om5Iu0Yt==;EndpointSuffix=core.windows.net", &["Qz8Vb2Nx7Lk4Jh6Gf3Ds1Ap9Om5Iu0Yt"]),
            plant("Post to https://hooks.slack.com/services/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", &["Zx4Cv6Bn8Mq1Wr3Ty5Ui7Op9", "B08ASDFGH"]),
            plant("SendGrid key 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", &["Kp3Lm7Nq9Rs2Tv4Wx6Yz8A", "Bc1De3Fg5Hi7Jk9Lm2No4"]),
            plant("upload with pypi-Up9Lo7Ad5Tk3Qw1Er2Ty4Ui6Op8As0Df2Gh4Jk6", &["Up9Lo7Ad5Tk3Qw1Er2Ty4Ui6Op8"]),
            plant("the .htpasswd line is deploy:$apr1$Xk2Lq9Zm$Rt5Vb7Nc3Hd8Jf1Gs4Pw6", &["Rt5Vb7Nc3Hd8Jf1Gs4Pw6"]),
            plant("ghp_Gh7Jk2Lm9Np4Qr6St8Uv1Wx3Yz5Ab0Cd2Ef4G is the token", &["Gh7Jk2Lm9Np4Qr6St8Uv1Wx3Yz5"]),
        ],
        tool_call: vec![
            plant("curl -u deploy:Curl9Pass https://ci.example.com/api", &["Curl9Pass"]),
            plant("mysql -h db -u root -pMyS9lPw shop", &["MyS9lPw"]),
            plant("pg_dump --password Fl4gPassX shop > dump.sql", &["Fl4gPassX"]),
            plant("sshpass -p Ssh9PassQ ssh ops@bastion", &["Ssh9PassQ"]),
            plant("export AWS_SECRET_ACCESS_KEY=Aw5Sk8Ey2Rt6Yu9Io1Pa3Sd4Fg7Hj0Kl2Zx5Cv8B", &["Aw5Sk8Ey2Rt6Yu9Io1Pa3Sd4"]),
        ],
        tool_result: vec![
            plant("machine api.github.com login bot password N3trcT0k9", &["N3trcT0k9"]),
            plant(r#"{"auths": {"registry.acme.io": {"auth": "ZGVwbG95OkRvY2tlclB3ZDk5"}}}"#, &["ZGVwbG95OkRvY2tlclB3ZDk5"]),
            plant(
                r#"{"type": "service_account", "private_key_id": "9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e1d0c", "private_key": "MIIEvAIBADANBgkqhkiG9w0BAQEFAASCBKYwggSiAgEAAoIBAQC7"}"#,
                &["9d8c7b6a5f4e3d2c1b0a", "MIIEvAIBADANBgkqhkiG9w0BAQEFAASCBKYw"],
            ),
            plant(
                "User name,Password,Access key ID,Secret access key\nci,,AKIAQ7WERTYUIOPASD12,Cs4Vs9Kq2Lm7Np3Rt8Vx1Zb6Hd5Jf0Gs2Pw4Qe7T",
                &["AKIAQ7WERTYUIOPASD12", "Cs4Vs9Kq2Lm7Np3Rt8Vx1Zb6"],
            ),
            plant("AWS Secret Access Key [None]: Cf9Gh2Jk5Lm8Np1Qr4St7Uv0Wx3Yz6Ab9Cd2Ef5G", &["Cf9Gh2Jk5Lm8Np1Qr4St7Uv0"]),
            key_block("PGP PRIVATE KEY BLOCK", 7, 20),
            key_block("RSA PRIVATE KEY", 11, 30),
        ],
        last_user: key_block("OPENSSH PRIVATE KEY", 13, 40),
        last_assistant: key_block("EC PRIVATE KEY", 17, 40),
    }
}

impl Corpus {
    fn all(&self) -> impl Iterator<Item = &Planted> {
        self.user
            .iter()
            .chain(&self.assistant)
            .chain(&self.tool_call)
            .chain(&self.tool_result)
            .chain([&self.last_user, &self.last_assistant])
    }

    /// Every planted fragment found in `text`.
    fn leaks(&self, text: &str) -> Vec<String> {
        self.all()
            .flat_map(|p| &p.fragments)
            .filter(|f| text.contains(f.as_str()))
            .cloned()
            .collect()
    }
}

/// The session: planted text in every kind of entry, ending with the two key blocks
/// right before long filler, so that any tail cut falls inside them.
fn write_session(agent: &Agent, c: &Corpus) -> PathBuf {
    let dir = agent
        .sessions()
        .join(crate::support::synth::encode_cwd(CWD));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("2026-02-20T12-00-00-000Z_{ID}.jsonl"));
    let mut lines = vec![
        json!({"type": "session", "version": 3, "id": ID, "timestamp": "2026-02-20T12:00:00.000Z", "cwd": CWD}),
    ];
    let mut n = 0;
    let mut push = |message: Value, lines: &mut Vec<Value>| {
        n += 1;
        let parent = if n == 1 {
            Value::Null
        } else {
            json!(format!("e{:07}", n - 1))
        };
        lines.push(
            json!({"type": "message", "id": format!("e{n:07}"), "parentId": parent,
            "timestamp": "2026-02-20T12:00:01.000Z", "message": message}),
        );
    };
    let text = |t: &str| json!([{"type": "text", "text": t}]);
    let assistant = |content: Value| json!({"role": "assistant", "content": content, "provider": "mock", "model": "m", "stopReason": "stop", "timestamp": 1_771_588_800_500i64});
    for (i, p) in c.user.iter().enumerate() {
        let user = json!({"role": "user", "content": text(&format!("Step {i} of the deploy setup: {}", p.text)), "timestamp": 1_771_588_800_000i64});
        push(user, &mut lines);
        let reply = c
            .assistant
            .get(i)
            .map_or_else(|| format!("Done with step {i}."), |a| a.text.clone());
        let mut content = vec![json!({"type": "text", "text": reply})];
        if let Some(call) = c.tool_call.get(i) {
            content.push(
                json!({"type": "toolCall", "id": format!("c{i}"), "name": "bash", "arguments": {"command": call.text}}),
            );
        }
        push(assistant(json!(content)), &mut lines);
        if c.tool_call.get(i).is_some() {
            let result = c.tool_result.get(i).map_or("ok", |r| r.text.as_str());
            push(
                json!({"role": "toolResult", "toolCallId": format!("c{i}"), "toolName": "bash",
                "content": text(result), "isError": false, "timestamp": 1_771_588_800_700i64}),
                &mut lines,
            );
        }
    }
    for r in c.tool_result.iter().skip(c.tool_call.len()) {
        push(
            assistant(
                json!([{"type": "toolCall", "id": "cx", "name": "read", "arguments": {"path": "/home/ops/keys.txt"}}]),
            ),
            &mut lines,
        );
        push(
            json!({"role": "toolResult", "toolCallId": "cx", "toolName": "read", "content": text(&format!("{}\n{}", r.text, "trailing line\n".repeat(80))),
            "isError": false, "timestamp": 1_771_588_800_700i64}),
            &mut lines,
        );
    }
    let filler = "We also reviewed the deploy checklist.\n".repeat(10);
    push(
        json!({"role": "user", "content": text(&format!("Here is the deploy key:\n{}\n{filler}", c.last_user.text)), "timestamp": 1_771_588_800_900i64}),
        &mut lines,
    );
    push(
        assistant(text(&format!(
            "Key installed:\n{}\n{filler}",
            c.last_assistant.text
        ))),
        &mut lines,
    );
    let body: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&path, body).unwrap();
    path
}

fn mock_config(mock: &MockProvider, extra: Value) -> String {
    let mut provider = mock.provider_config();
    provider["noApiKey"] = json!(true);
    let mut config = json!({"modelKeys": ["mock/gpt-test"], "providers": {"mock": provider}, "useHostModels": false,
        "timeoutMs": 30000, "query": {"maxCallsPerTurn": 50}});
    for (k, v) in extra.as_object().into_iter().flatten() {
        config[k] = v.clone();
    }
    config.to_string()
}

const OFFLINE: &str = r#"{"modelKeys":["local/extractive"],"query":{"maxCallsPerTurn":50}}"#;

fn summary_reply() -> Reply {
    Reply::answer_json(&json!({
        "name": "Deploy setup with credentials", "description": "Set up the deploy. Credentials were handled.",
        "summary": "## Goal\nDeploy\n## Key Decisions\n- none\n## Outcome\nDone\n## Next Steps\n- none",
        "tags": ["deploy", "credentials", "ops"], "decisions": [], "openTasks": []
    }))
}

fn query_reply() -> Reply {
    Reply::answer_json(
        &json!({"answerMarkdown": "It was configured.", "confidence": "low", "citations": []}),
    )
}

/// Questions aimed at every planted secret, so retrieval shows the model (or the offline
/// answer quotes) the entries that hold them.
const QUESTIONS: &[&str] = &[
    "What was the SECRET_KEY, JWT_SIGNING_KEY, DB_PASS and DB_PASSWORD?",
    "Which redis, mysql, curl, sshpass and pg_dump passwords were used?",
    "What is in the netrc, the docker auths and the service account private_key_id?",
    "What AWS secret access key, AccountKey, SendGrid, pypi, whsec and slack hooks were set?",
    "Show the deploy key, the PGP private key block and the RSA private key",
    "What is my IBAN and the htpasswd line and the ghp token?",
];

fn request(path: &Path, agent: &Agent, leaf: Option<&str>) -> IndexRequest {
    IndexRequest {
        session_file: path.to_path_buf(),
        meta_dir: agent.meta_dir(),
        leaf_id: leaf.map(str::to_string),
        force: true,
        offline: false,
        replace: session_index::store::meta::Replace::KeepModelWritten,
        past_cap: false,
    }
}

fn injected(services: &Arc<Services>, agent: &Agent, prompt: &str) -> String {
    let message = session_index::features::references::before_agent_start(
        services,
        &agent.ctx("/elsewhere"),
        prompt,
        &[],
    )
    .expect("a message");
    format!("{}\n{}", message.content, message.details)
}

fn assert_no_leak(c: &Corpus, path: &str, text: &str) {
    let leaks = c.leaks(text);
    assert!(leaks.is_empty(), "{path} leaked {leaks:?}");
}

#[test]
fn the_corpus_is_real() {
    // Guard against a test that cannot fail: the planted fragments are in the file.
    let agent = Agent::new();
    let c = corpus();
    let text = std::fs::read_to_string(write_session(&agent, &c)).unwrap();
    let missing: Vec<&String> = c
        .all()
        .flat_map(|p| &p.fragments)
        .filter(|f| !text.contains(f.as_str()))
        .collect();
    assert!(missing.is_empty(), "{missing:?}");
}

#[test]
fn no_planted_secret_reaches_a_model_or_an_injection() {
    let agent = Agent::new();
    let c = corpus();
    let path = write_session(&agent, &c);
    let mock = MockProvider::start(Wire::OpenAi);
    // A tail of 2 KiB cuts inside the last user message's key block (its BEGIN line is ~2.6 KiB back).
    let (services, _) = agent.services(
        "/elsewhere",
        &mock_config(
            &mock,
            json!({"indexing": {"maxInputBytes": 2048, "incrementalMaxBytes": 2048}}),
        ),
    );

    // @@ without a meta file: the on-the-fly extract (its 1,500-char tail cuts inside the last key block).
    assert_no_leak(
        &c,
        "@@ without meta",
        &injected(&services, &agent, &format!("see @@{}", &ID[..8])),
    );

    // Indexing through the model: a first index up to the middle, then an incremental one.
    mock.push(summary_reply());
    mock.push(summary_reply());
    let middle = format!("e{:07}", 12);
    assert!(matches!(
        index_session(
            &services.model_env(),
            &request(&path, &agent, Some(&middle)),
            &|| {}
        ),
        Ok(IndexOutcome::Indexed(_))
    ));
    assert!(matches!(
        index_session(&services.model_env(), &request(&path, &agent, None), &|| {}),
        Ok(IndexOutcome::Indexed(_))
    ));

    // query_session with the model, and @@name: question answered by the model.
    for q in QUESTIONS {
        mock.push(query_reply());
        assert_no_leak(
            &c,
            "query_session (model) result",
            &agent.query_session(&services, ID, q),
        );
    }
    mock.push(query_reply());
    let asked = injected(
        &services,
        &agent,
        &format!("@@{}: {}", &ID[..8], QUESTIONS[0]),
    );
    assert_no_leak(&c, "@@ question (model)", &asked);
    assert!(
        asked.contains("It was configured."),
        "the model's answer was injected: {asked}"
    );

    let sent = mock.requests();
    assert_eq!(
        sent.len(),
        2 + QUESTIONS.len() + 1,
        "every path reached the mock provider"
    );
    assert!(
        sent[1]
            .texts()
            .contains("Messages since the previous index"),
        "the second index was incremental"
    );
    for (k, r) in sent.iter().enumerate() {
        assert_no_leak(&c, &format!("request {k} to the model"), &r.body);
        assert!(
            r.body.contains("[REDACTED]"),
            "request {k} saw planted text at all"
        );
    }
    // @@ with the model-written meta file.
    assert_no_leak(
        &c,
        "@@ with model meta",
        &injected(&services, &agent, &format!("see @@{}", &ID[..8])),
    );

    // Offline: query_session and @@ answers quote the session; the extractive index writes a meta file.
    let (offline, _) = agent.services("/elsewhere", OFFLINE);
    for q in QUESTIONS {
        let answer = agent.query_session(&offline, ID, q);
        assert_no_leak(&c, "query_session (offline)", &answer);
        assert_no_leak(
            &c,
            "@@ question (offline)",
            &injected(&offline, &agent, &format!("@@{}: {q}", &ID[..8])),
        );
    }
    // Over the model's meta, as `index --offline --force` writes it.
    let offline_request = IndexRequest {
        offline: true,
        replace: session_index::store::meta::Replace::Any,
        ..request(&path, &agent, None)
    };
    assert!(matches!(
        index_session(&offline.model_env(), &offline_request, &|| {}),
        Ok(IndexOutcome::Indexed(_))
    ));
    let meta = std::fs::read_to_string(agent.meta_dir().join(format!("{ID}.meta.json"))).unwrap();
    assert_no_leak(&c, "offline meta file", &meta);
    assert_no_leak(
        &c,
        "@@ with offline meta",
        &injected(&offline, &agent, &format!("see @@{}", &ID[..8])),
    );
}

#[test]
fn a_meta_file_holding_secrets_is_redacted_when_injected() {
    let agent = Agent::new();
    let c = corpus();
    let path = write_session(&agent, &c);
    let secrets: Vec<&str> = c
        .user
        .iter()
        .chain(&c.assistant)
        .map(|p| p.text.as_str())
        .collect();
    agent.meta(
        ID,
        "Deploy",
        &secrets.join("; "),
        &["deploy"],
        &c.last_user.text,
        &path,
    );
    let (services, _) = agent.services("/elsewhere", OFFLINE);
    let text = injected(&services, &agent, &format!("see @@{}", &ID[..8]));
    assert!(text.contains("source: meta file"), "{text}");
    // `<private>` spans are a prompt convention: a meta file's own text is only redacted.
    let leaks: Vec<String> = c
        .leaks(&text)
        .into_iter()
        .filter(|l| !["DE89370400440532013000", "my IBAN is"].contains(&l.as_str()))
        .collect();
    assert!(leaks.is_empty(), "{leaks:?}");
}

#[test]
fn excluded_sessions_are_never_indexed_referenced_or_queried() {
    let agent = Agent::new();
    let c = corpus();
    let path = write_session(&agent, &c);
    let mock = MockProvider::start(Wire::OpenAi);
    let (services, _) = agent.services(
        "/elsewhere",
        &mock_config(&mock, json!({"privacy": {"exclude": ["*/leaky"]}})),
    );
    let indexed = index_session(&services.model_env(), &request(&path, &agent, None), &|| {});
    assert!(
        matches!(&indexed, Err(f) if f.error.to_string().contains("privacy.exclude")),
        "{:?}",
        indexed.err().map(|f| f.error)
    );
    let answer = agent.query_session(&services, ID, QUESTIONS[0]);
    assert!(answer.contains("SESSION_EXCLUDED"), "{answer}");
    let message = session_index::features::references::before_agent_start(
        &services,
        &agent.ctx("/elsewhere"),
        &format!("@@{}", &ID[..8]),
        &[],
    )
    .unwrap();
    assert_eq!(message.details["unresolved"][0]["code"], "SESSION_EXCLUDED");
    assert!(
        !message.content.contains("session-reference id="),
        "{}",
        message.content
    );
    assert!(
        mock.requests().is_empty(),
        "no model was asked about an excluded session"
    );
    assert!(!agent.meta_dir().join(format!("{ID}.meta.json")).exists());
}

/// False positives: every string of every shared pi session fixture (real and generated:
/// code, diffs, git hashes, UUIDs, session ids, config files with placeholders) is left
/// as it is. A rule that starts redacting ordinary session text fails here.
#[test]
fn real_sessions_stay_readable() {
    let mut changed = Vec::new();
    let mut strings = 0;
    for sub in ["real", "generated"] {
        for file in std::fs::read_dir(crate::support::synth::fixture(sub)).unwrap() {
            let path = file.unwrap().path();
            for line in std::fs::read_to_string(&path).unwrap().lines() {
                let mut stack: Vec<Value> = serde_json::from_str(line).into_iter().collect();
                while let Some(v) = stack.pop() {
                    match v {
                        Value::String(s) => {
                            strings += 1;
                            if session_index::redact::session_text(&s) != s {
                                changed.push(format!(
                                    "{}: {}",
                                    path.display(),
                                    s.chars().take(200).collect::<String>()
                                ));
                            }
                        }
                        Value::Array(a) => stack.extend(a),
                        Value::Object(o) => stack.extend(o.into_iter().map(|(_, v)| v)),
                        _ => {}
                    }
                }
            }
        }
    }
    assert!(strings > 4000, "only {strings} strings: fixtures missing?");
    assert!(changed.is_empty(), "{changed:#?}");
}
