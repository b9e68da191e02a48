// The example project and the scripted conversations (user prompts and the
// mock model's canned turns; pi runs the tool calls for real).

export const PROJECT_FILES = {
  "Cargo.toml": `[package]
name = "gateway"
version = "0.3.0"
edition = "2021"

[dependencies]
jsonwebtoken = "9"
`,
  "src/main.rs": `mod auth;
mod gateway;

fn main() {
    let gateway = gateway::Gateway::new();
    gateway.serve("127.0.0.1:8080");
}
`,
  "src/gateway.rs": `use crate::auth;

pub struct Gateway {
    routes: Vec<Route>,
}

impl Gateway {
    pub fn new() -> Self {
        Gateway { routes: Vec::new() }
    }

    pub fn handle(&self, request: &Request) -> Response {
        let Some(api_key) = request.header("x-api-key") else {
            return Response::status(401);
        };
        if !auth::valid_key(api_key) {
            return Response::status(403);
        }
        self.route(request)
    }
}
`,
  "src/auth.rs": `use jsonwebtoken::{encode, decode, Header, Validation};

pub fn issue_token(user_id: &str, secret: &[u8]) -> String {
    let claims = Claims { sub: user_id.to_string() };
    encode(&Header::default(), &claims, secret)
}

pub fn check_token(token: &str, secret: &[u8]) -> bool {
    let validation = Validation::default();
    decode::<Claims>(token, secret, &validation).is_ok()
}
`,
  "tests/gateway_test.rs": `#[test]
fn gateway_handles_concurrent_clients() {
    let listener = std::net::TcpListener::bind("127.0.0.1:8080").unwrap();
    spawn_clients(&listener, 32);
}

#[test]
fn gateway_rejects_bad_keys() {
    let listener = std::net::TcpListener::bind("127.0.0.1:8080").unwrap();
    assert_eq!(request(&listener, "bad-key").status, 403);
}
`,
  ".github/workflows/ci.yml": `name: ci
on: [push, pull_request]
jobs:
  test:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - uses: dtolnay/rust-toolchain@stable
      - run: cargo test --all
`,
};

const LIMITER_RS = `use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

/// A token bucket: \`capacity\` tokens, refilled continuously at \`per_second\`.
pub struct TokenBucket {
    tokens: f64,
    capacity: f64,
    per_second: f64,
    last: Instant,
}

impl TokenBucket {
    pub fn new(capacity: f64, per_second: f64) -> Self {
        TokenBucket { tokens: capacity, capacity, per_second, last: Instant::now() }
    }

    /// Take one token; \`Err(seconds)\` until the next token when empty.
    pub fn take(&mut self, now: Instant) -> Result<(), f64> {
        let elapsed = now.duration_since(self.last).as_secs_f64();
        self.tokens = (self.tokens + elapsed * self.per_second).min(self.capacity);
        self.last = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            Ok(())
        } else {
            Err((1.0 - self.tokens) / self.per_second)
        }
    }
}

/// One bucket per API key.
pub struct RateLimiter {
    buckets: Mutex<HashMap<String, TokenBucket>>,
    per_minute: u32,
}

impl RateLimiter {
    pub fn new(per_minute: u32) -> Self {
        RateLimiter { buckets: Mutex::new(HashMap::new()), per_minute }
    }

    pub fn allow(&self, api_key: &str) -> Result<(), f64> {
        let mut buckets = self.buckets.lock().unwrap();
        let limit = self.per_minute as f64;
        let bucket = buckets.entry(api_key.to_string()).or_insert_with(|| TokenBucket::new(limit, limit / 60.0));
        bucket.take(Instant::now())
    }
}
`;

const LIMITER_TEST_RS = `use gateway::limiter::TokenBucket;
use std::time::{Duration, Instant};

#[test]
fn bucket_refills_over_time() {
    let start = Instant::now();
    let mut bucket = TokenBucket::new(2.0, 1.0);
    assert!(bucket.take(start).is_ok());
    assert!(bucket.take(start).is_ok());
    assert!(bucket.take(start).is_err());
    assert!(bucket.take(start + Duration::from_secs(1)).is_ok());
}

#[test]
fn limit_is_enforced_per_key() {
    let limiter = gateway::limiter::RateLimiter::new(100);
    for _ in 0..100 {
        assert!(limiter.allow("key-a").is_ok());
    }
    assert!(limiter.allow("key-a").is_err());
    assert!(limiter.allow("key-b").is_ok());
}
`;

const REFRESH_RS = `use crate::auth;

/// POST /auth/refresh: exchange a refresh token (httpOnly cookie) for a new
/// access token, rotating the refresh token. A reused refresh token revokes
/// the whole family (reuse detection).
pub fn refresh(store: &TokenStore, cookie: &str, secret: &[u8]) -> Result<(String, String), RefreshError> {
    let family = store.lookup(cookie).ok_or(RefreshError::Unknown)?;
    if family.used(cookie) {
        store.revoke_family(&family);
        return Err(RefreshError::Reused);
    }
    let next = store.rotate(&family, cookie);
    Ok((auth::issue_token(&family.user_id, secret), next))
}
`;

export const SCRIPTS = [
  {
    slug: "rate-limiter",
    steps: [
      {
        user: "Add per-client rate limiting to the API gateway for GW-142: at most 100 requests per minute per API key.",
        turns: [
          { text: "Let me look at the gateway first.", tools: [{ name: "read", args: { path: "src/gateway.rs" } }] },
          {
            text:
              "Every request goes through `Gateway::handle`, after the API key check, so the limiter belongs right there.\n\n" +
              "Two options:\n- a fixed window counter: simple, but allows bursts of 2x at window edges;\n" +
              "- a token bucket per API key: smooth, O(1) per request.\n\nI suggest the token bucket.",
          },
        ],
      },
      {
        user: "Token bucket sounds right. Let's go with a token bucket keyed by API key, refilled continuously.",
        turns: [
          { text: "Writing the limiter.", tools: [{ name: "write", args: { path: "src/limiter.rs", content: LIMITER_RS } }] },
          {
            tools: [
              {
                name: "edit",
                args: {
                  path: "src/gateway.rs",
                  edits: [
                    {
                      oldText: "        if !auth::valid_key(api_key) {\n            return Response::status(403);\n        }\n",
                      newText:
                        "        if !auth::valid_key(api_key) {\n            return Response::status(403);\n        }\n" +
                        "        if let Err(wait) = self.limiter.allow(api_key) {\n            return Response::too_many_requests(wait);\n        }\n",
                    },
                  ],
                },
              },
            ],
          },
          {
            text:
              "Done: `src/limiter.rs` holds `TokenBucket` and `RateLimiter`, and `Gateway::handle` now calls `limiter.allow(api_key)` after the key check. " +
              "Decision: we'll use a `Mutex<HashMap>` for the buckets for now instead of DashMap, to avoid a new dependency.",
          },
        ],
      },
      {
        user: "What should clients get when they're limited?",
        turns: [
          {
            text:
              "HTTP 429 Too Many Requests with a `Retry-After` header: the seconds until the next token, rounded up. " +
              "Most HTTP clients and SDKs already back off on that.",
          },
        ],
      },
      {
        user: "Agreed, do that and add a test.",
        turns: [
          {
            tools: [
              {
                name: "edit",
                args: {
                  path: "src/gateway.rs",
                  edits: [
                    {
                      oldText: "        self.route(request)\n",
                      newText:
                        "        self.route(request)\n    }\n\n    fn too_many_requests(wait: f64) -> Response {\n" +
                        "        Response::status(429).header(\"Retry-After\", wait.ceil().to_string())\n",
                    },
                  ],
                },
              },
            ],
          },
          { tools: [{ name: "write", args: { path: "tests/limiter_test.rs", content: LIMITER_TEST_RS } }] },
          { tools: [{ name: "bash", args: { command: "grep -n 'Retry-After' src/gateway.rs && wc -l tests/limiter_test.rs" } }] },
          {
            text:
              "429 with `Retry-After` is in place, and `tests/limiter_test.rs` covers the refill and the per-key limit. " +
              "I can't run cargo in this sandbox, so please run `cargo test`.",
          },
        ],
      },
      {
        user: "Tests pass locally. What's left?",
        turns: [
          {
            text:
              "The limiter works for GW-142. Remaining:\n" +
              "- TODO: make the limit configurable per plan (free/pro) instead of the hard-coded 100/min.\n" +
              "- Next step: evict idle buckets so the map does not grow without bound.\n" +
              "- Open a PR that references GW-142.",
          },
        ],
      },
    ],
  },
  {
    slug: "jwt-expiry",
    steps: [
      {
        user: "Login tokens never expire right now (issue #87). Can you look at src/auth.rs and propose a fix?",
        turns: [
          { tools: [{ name: "read", args: { path: "src/auth.rs" } }] },
          {
            text:
              "`issue_token` signs a JWT without an `exp` claim, so every token is valid forever. " +
              "Options: short-lived access tokens plus refresh tokens, or server-side sessions. Short-lived JWTs keep the gateway stateless.",
          },
        ],
      },
      {
        user: "We decided: 15 minute access tokens, refresh tokens valid 7 days in an httpOnly cookie.",
        turns: [
          {
            tools: [
              {
                name: "edit",
                args: {
                  path: "src/auth.rs",
                  edits: [
                    {
                      oldText: "    let claims = Claims { sub: user_id.to_string() };\n",
                      newText: "    let exp = now() + 15 * 60;\n    let claims = Claims { sub: user_id.to_string(), exp };\n",
                    },
                  ],
                },
              },
            ],
          },
          { text: "Access tokens now carry `exp = now + 15 min`. The refresh endpoint comes next." },
        ],
      },
      {
        user: "Go ahead with the refresh endpoint.",
        turns: [
          { tools: [{ name: "write", args: { path: "src/refresh.rs", content: REFRESH_RS } }] },
          {
            text:
              "Added `src/refresh.rs`: `POST /auth/refresh` rotates the refresh token on every use and, if an old refresh token is reused, " +
              "revokes the whole token family (reuse detection).",
          },
        ],
      },
      {
        user: "CI shows the clock skew test failing: tokens issued at 12:00:00 are rejected at 12:00:00.5 on another node.",
        turns: [
          { tools: [{ name: "bash", args: { command: "grep -n 'leeway' src/auth.rs || echo 'no leeway configured'" } }] },
          {
            tools: [
              {
                name: "edit",
                args: {
                  path: "src/auth.rs",
                  edits: [
                    {
                      oldText: "    let validation = Validation::default();\n",
                      newText: "    let mut validation = Validation::default();\n    validation.leeway = 30;\n",
                    },
                  ],
                },
              },
            ],
          },
          { text: "Validation had zero leeway between nodes. Decision: allow 30 seconds of clock skew leeway when checking `exp` and `nbf`." },
        ],
      },
      {
        user: "Pushed as https://github.com/acme/gateway/pull/91. Anything else before merge?",
        turns: [
          {
            text:
              "Two things before merge:\n- We still need to update the API docs for `POST /auth/refresh`.\n" +
              "- Follow-up: revoke all refresh tokens when a user changes their password.",
          },
        ],
      },
      { name: "JWT expiry and refresh tokens" },
    ],
  },
  {
    slug: "flaky-ci",
    steps: [
      {
        user: "The gateway_handles_concurrent_clients test fails about one run in ten on CI (OPS-7). Find out why.",
        turns: [
          { tools: [{ name: "read", args: { path: "tests/gateway_test.rs" } }] },
          {
            text:
              "The test binds the fixed port 8080, and cargo runs tests in parallel threads, so another test binding the same port " +
              "makes `bind` fail with AddrInUse intermittently.",
          },
        ],
      },
      {
        user: "Check which other tests use port 8080.",
        turns: [
          { tools: [{ name: "bash", args: { command: "grep -rn '8080' tests src || true" } }] },
          { text: "Two tests bind 8080: `gateway_handles_concurrent_clients` and `gateway_rejects_bad_keys` (and `main.rs` serves on it)." },
        ],
      },
      {
        user: "Let's use an ephemeral port instead: bind to port 0 and read the assigned port back.",
        turns: [
          {
            tools: [
              {
                name: "edit",
                args: {
                  path: "tests/gateway_test.rs",
                  edits: [
                    {
                      oldText:
                        "fn gateway_handles_concurrent_clients() {\n    let listener = std::net::TcpListener::bind(\"127.0.0.1:8080\").unwrap();\n",
                      newText:
                        "fn gateway_handles_concurrent_clients() {\n    let listener = std::net::TcpListener::bind(\"127.0.0.1:0\").unwrap();\n",
                    },
                    {
                      oldText: "fn gateway_rejects_bad_keys() {\n    let listener = std::net::TcpListener::bind(\"127.0.0.1:8080\").unwrap();\n",
                      newText: "fn gateway_rejects_bad_keys() {\n    let listener = std::net::TcpListener::bind(\"127.0.0.1:0\").unwrap();\n",
                    },
                  ],
                },
              },
            ],
          },
          { text: "Both tests now bind `127.0.0.1:0` and use `listener.local_addr()` for the port, so they can run in parallel." },
        ],
      },
      {
        user: "Also the CI job itself: is dependency caching set up?",
        turns: [
          { tools: [{ name: "read", args: { path: ".github/workflows/ci.yml" } }] },
          { text: "No cache step: every run rebuilds all dependencies (about 4 minutes). Adding `Swatinem/rust-cache@v2` would cut that." },
        ],
      },
      {
        user: "Yes, add the cache.",
        turns: [
          {
            tools: [
              {
                name: "edit",
                args: {
                  path: ".github/workflows/ci.yml",
                  edits: [
                    {
                      oldText: "      - uses: dtolnay/rust-toolchain@stable\n",
                      newText: "      - uses: dtolnay/rust-toolchain@stable\n      - uses: Swatinem/rust-cache@v2\n",
                    },
                  ],
                },
              },
            ],
          },
          { text: "Added `Swatinem/rust-cache@v2` right after the toolchain step." },
        ],
      },
      {
        user: "Thanks. Summarize what is left.",
        turns: [{ text: "Left to do: watch the next 20 CI runs to confirm the flake is gone, then close OPS-7." }],
      },
    ],
  },
];
