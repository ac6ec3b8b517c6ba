//! Properties of the configuration loader and the HTTP API's request decoding over their
//! whole input domain (issue 26, item 3). The schedule parsers' properties are in
//! `tests/properties_schedule.rs`, memory's (FTS queries, chunker, JSONL import) in
//! `tests/properties_memory.rs`; budget, corpus format and where failures are kept:
//! `tests/props/mod.rs`.
//!
//! - the config loader: TOML-ish text, and the shipped `config/nightshift.toml` (with its
//!   commented examples switched on) after random deletions, replacements by values of any
//!   type (huge numbers, NaN, dates, tables) and unknown keys: never a panic; loaded, or an
//!   error naming a key; what loads passes `config check`'s structure check or fails it
//!   naming a key;
//! - the HTTP API: random JSON (and non-JSON) bodies, content types, tokens, ids and
//!   queries to every POST and PATCH route through the real router in-process: always a
//!   2xx or a 4xx, each 4xx a JSON error body; never a 5xx, never a panic.
//!
//! Run all three files: `cargo test --test properties --test properties_schedule
//! --test properties_memory`; longer: `scripts/fuzz.sh`.

#[path = "props/mod.rs"]
mod props;

use std::collections::BTreeMap;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use nightshift::config::{Config, ConfigError};
use nightshift::tokens::NewToken;
use percent_encoding::{utf8_percent_encode, NON_ALPHANUMERIC};
use proptest::prelude::*;
use proptest::sample::{select, Index};
use proptest::test_runner::TestCaseError;
use serde_json::{json, Value};
use tempfile::TempDir;
use tower::ServiceExt;

const REGRESSIONS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/proptest-regressions/properties.txt"
);

fn config(short: u32, weight: u32) -> ProptestConfig {
    props::config(short, weight, REGRESSIONS)
}

// ---------------------------------------------------------------------------------------
// The config loader
// ---------------------------------------------------------------------------------------

/// The top-level sections an `Invalid` error's key may start with.
const SECTIONS: &[&str] = &[
    "database",
    "memory",
    "search",
    "embedding",
    "scheduler",
    "runtime",
    "schedules",
    "calendars",
    "notify",
    "consolidation",
    "channels",
    "users",
    "server",
    "artifacts",
    "mcp_servers",
    "traces",
    "sources",
];

/// The commented examples of config/nightshift.toml, switched on.
const EXAMPLES: &str = r#"
[[schedules]]
name = "morning-digest"
user = "alice"
goal = "Summarise what is on my calendar today"
cron = "30 7 * * 1-5"
tz = "Europe/Lisbon"
channel = "telegram:123456"
notify = "always"
overlap = "skip"
catch_up = "once"
max_attempts = 3
timeout_secs = 300
max_turns = 8
max_cost = 0.05
starts_at = "2027-01-04"
ends_at = "2027-06-30"
max_runs = 100
skip = ["2026-12-25", "* * 24-26 12 *"]
calendars = ["holidays"]
jitter = "5m"
catch_up_window = "6h"

[[schedules]]
name = "weekly"
user = "bob"
goal = "Plan the week"
when = "every monday at 9am"

[calendars.holidays]
dates = ["2026-12-25", "2027-01-01"]

[channels.hook]
kind = "webhook"
url = "https://example.org/nightshift"
secret_env = "NIGHTSHIFT_HOOK_SECRET"

[channels.slack]
kind = "slack"
url = "https://hooks.slack.com/services/x"
quiet_hours = "20:00-08:00"
timezone = "Europe/Lisbon"

[channels.telegram]
kind = "telegram"
secret_file = "telegram-token"

[channels.push]
kind = "ntfy"
url = "https://ntfy.sh"

[channels.discord]
kind = "discord"
secret_file = "discord-webhook"

[channels.teams]
kind = "teams"
url = "https://example.org/workflows/x"

[channels.phone]
kind = "pushover"
secret_file = "pushover-token"
priority = 1

[channels.matrix]
kind = "matrix"
url = "https://matrix.example.org"
secret_file = "matrix-token"

[channels.apprise]
kind = "apprise"
url = "http://apprise:8000/notify/nightshift"

[channels.audit]
kind = "log"

[users.alice]
default_channel = "telegram:123456"
channels = ["push"]
timezone = "Europe/Lisbon"
quiet_hours = "22:00-07:00"

[sources.github]
verify = "github"
secret_file = "github-hook"
schedules = ["weekly"]
fields = { repo = "/repository/full_name", message = "/head_commit/message" }
tolerance_secs = 300
"#;

/// The shipped file with its examples, as a TOML table; it loads and checks as it is.
fn shipped() -> toml::Table {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/config/nightshift.toml");
    let text = std::fs::read_to_string(path).unwrap() + EXAMPLES;
    let config = Config::from_toml(&text).expect("the shipped file with its examples loads");
    nightshift::app::check::structure(&config).expect("and passes the structure check");
    text.parse().unwrap()
}

#[derive(Debug, Clone, PartialEq)]
enum Step {
    Key(String),
    Item(usize),
}

/// The path of every value in `table`, tables and arrays included.
fn paths(value: &toml::Value, at: &mut Vec<Step>, out: &mut Vec<Vec<Step>>) {
    match value {
        toml::Value::Table(t) => {
            for (k, v) in t {
                at.push(Step::Key(k.clone()));
                out.push(at.clone());
                paths(v, at, out);
                at.pop();
            }
        }
        toml::Value::Array(a) => {
            for (i, v) in a.iter().enumerate() {
                at.push(Step::Item(i));
                out.push(at.clone());
                paths(v, at, out);
                at.pop();
            }
        }
        _ => {}
    }
}

fn get_mut<'a>(value: &'a mut toml::Value, path: &[Step]) -> Option<&'a mut toml::Value> {
    let mut v = value;
    for step in path {
        v = match (step, v) {
            (Step::Key(k), toml::Value::Table(t)) => t.get_mut(k)?,
            (Step::Item(i), toml::Value::Array(a)) => a.get_mut(*i)?,
            _ => return None,
        };
    }
    Some(v)
}

#[derive(Debug, Clone)]
enum Mutation {
    Delete(Index),
    Replace(Index, toml::Value),
    /// A key (known somewhere in the file, or made up) in a table.
    Insert(Index, String, toml::Value),
}

fn toml_value() -> BoxedStrategy<toml::Value> {
    let leaf = prop_oneof![
        any::<i64>().prop_map(toml::Value::Integer),
        select(vec![
            i64::MIN,
            i64::MAX,
            -1,
            0,
            1,
            u32::MAX as i64 + 1,
            1 << 53
        ])
        .prop_map(toml::Value::Integer),
        (-5i64..100_000).prop_map(toml::Value::Integer),
        any::<f64>().prop_map(toml::Value::Float),
        select(vec![
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            -0.0,
            1e308,
            0.5,
            1.5
        ])
        .prop_map(toml::Value::Float),
        any::<bool>().prop_map(toml::Value::Boolean),
        any::<String>().prop_map(toml::Value::String),
        select(vec![
            "",
            " ",
            "UTC",
            "Mars/Olympus",
            "5m",
            "0s",
            "-1s",
            "99999999999999999999s",
            "* * * * *",
            "61 * * * *",
            "every weekday at 9am",
            "http://",
            "https://example.org",
            "ftp://example.org",
            "file:///etc/passwd",
            "telegram:",
            "log",
            "log:x",
            "\0",
            "9999-12-31",
            "2026-02-30",
            "../../x",
            "a\u{1b}[2J",
            "hash",
            "fastembed",
            "openai",
            "none",
            "always",
            "skip",
            "succeeded",
            "webhook",
            "127.0.0.1:0",
            "[::1]:99999",
            "sch-x",
            "holidays",
            "alice",
        ])
        .prop_map(|s| toml::Value::String(s.to_string())),
        select(vec![
            "1979-05-27T07:32:00Z",
            "1979-05-27",
            "07:32:00",
            "1979-05-27T07:32:00"
        ])
        .prop_map(|d| toml::Value::Datetime(d.parse().unwrap())),
    ];
    leaf.prop_recursive(2, 8, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(toml::Value::Array),
            prop::collection::btree_map("[a-z_]{1,10}", inner, 0..3)
                .prop_map(|m| toml::Value::Table(m.into_iter().collect())),
        ]
    })
    .boxed()
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let key = prop_oneof![
        select(vec![
            "path",
            "pool_size",
            "chunk_chars",
            "cron",
            "tz",
            "goal",
            "every",
            "when",
            "at",
            "kind",
            "url",
            "listen",
            "dates",
            "file",
            "user",
            "channel",
            "max_per_user",
            "triggered",
            "after",
            "on",
            "secret_env",
            "default_channel",
            "enabled",
        ])
        .prop_map(str::to_string),
        "[a-z_]{1,12}",
    ];
    prop_oneof![
        2 => any::<Index>().prop_map(Mutation::Delete),
        4 => (any::<Index>(), toml_value()).prop_map(|(i, v)| Mutation::Replace(i, v)),
        1 => (any::<Index>(), key, toml_value()).prop_map(|(i, k, v)| Mutation::Insert(i, k, v)),
    ]
}

/// Applies `m`, returning the names an error about it may give: the key changed (or the
/// array holding the item), the keys inside a value put in, a key added.
fn apply(root: &mut toml::Value, m: &Mutation) -> Vec<String> {
    let mut all = Vec::new();
    paths(root, &mut Vec::new(), &mut all);
    let named = |path: &[Step]| -> Vec<String> {
        path.iter()
            .rev()
            .filter_map(|s| match s {
                Step::Key(k) => Some(k.clone()),
                Step::Item(_) => None,
            })
            .take(2)
            .collect()
    };
    let keys_in = |v: &toml::Value| {
        let mut inner = Vec::new();
        paths(v, &mut Vec::new(), &mut inner);
        inner
            .into_iter()
            .flat_map(|p| named(&p))
            .collect::<Vec<_>>()
    };
    match m {
        Mutation::Delete(i) => {
            let path = &all[i.index(all.len())];
            let (last, parent) = path.split_last().unwrap();
            match (get_mut(root, parent), last) {
                (Some(toml::Value::Table(t)), Step::Key(k)) => {
                    t.remove(k);
                }
                (Some(toml::Value::Array(a)), Step::Item(i)) => {
                    a.remove(*i);
                }
                _ => {}
            }
            named(path)
        }
        Mutation::Replace(i, value) => {
            let path = &all[i.index(all.len())];
            *get_mut(root, path).unwrap() = value.clone();
            let mut names = named(path);
            names.extend(keys_in(value));
            names
        }
        Mutation::Insert(i, key, value) => {
            let mut tables: Vec<Vec<Step>> = all
                .into_iter()
                .filter(|p| matches!(get_mut(root, p), Some(toml::Value::Table(_))))
                .collect();
            tables.push(Vec::new());
            let path = tables[i.index(tables.len())].clone();
            if let Some(toml::Value::Table(t)) = get_mut(root, &path) {
                t.insert(key.clone(), value.clone());
            }
            let mut names = named(&path);
            names.push(key.clone());
            names.extend(keys_in(value));
            names
        }
    }
}

/// Loads `text` and checks the outcome: a configuration that passes the structure check
/// or fails it naming a key, or an error naming a key (`names`: the ones a parse error
/// may name; `None`: any).
fn load(text: &str, names: Option<&[String]>) -> Result<(), String> {
    let key_ok = |key: &str| {
        let first = key.split(['.', '[']).next().unwrap_or_default();
        !key.is_empty() && SECTIONS.contains(&first)
    };
    match Config::from_toml(text) {
        Ok(config) => match nightshift::app::check::structure(&config) {
            Ok(_) => Ok(()),
            Err(ConfigError::Invalid { key, reason }) if key_ok(&key) && !reason.is_empty() => {
                Ok(())
            }
            Err(err) => Err(format!("the structure check: {err:?}")),
        },
        Err(ConfigError::Invalid { key, reason }) => {
            if key_ok(&key) && !reason.is_empty() {
                Ok(())
            } else {
                Err(format!("names no key: `{key}`: {reason}"))
            }
        }
        Err(ConfigError::Parse { message, .. }) => match names {
            Some(names) if !names.iter().any(|n| message.contains(n.as_str())) => {
                Err(format!("names none of {names:?}: {message}"))
            }
            _ if message.trim().is_empty() => Err("an empty message".into()),
            _ => Ok(()),
        },
        Err(other) => Err(format!("{other:?}")),
    }
}

/// TOML-ish lines: sections and keys of the file (and others), values of every kind
/// written as text, some of it not TOML at all.
fn tomlish() -> impl Strategy<Value = String> {
    let section = select(SECTIONS.to_vec()).prop_map(|s| format!("[{s}]"));
    let array_section = select(vec![
        "[[schedules]]",
        "[[schedules]",
        "[calendars.x]",
        "[channels.c]",
        "[users.u]",
        "[[server]]",
    ])
    .prop_map(str::to_string);
    let key = prop_oneof![
        select(vec![
            "path",
            "pool_size",
            "chunk_chars",
            "chunk_overlap_chars",
            "busy_timeout_ms",
            "lease_secs",
            "cron",
            "goal",
            "every",
            "tz",
            "kind",
            "url",
            "listen",
            "dates",
            "max_body_bytes",
            "rate_per_token",
            "vector_weight",
            "timezone",
            "user",
        ])
        .prop_map(str::to_string),
        "[a-z_]{1,10}",
        "\\PC{1,6}",
    ];
    let value = prop_oneof![
        select(vec![
            "99999999999999999999",
            "-9223372036854775808",
            "9223372036854775807",
            "1e999",
            "-1e999",
            "inf",
            "-inf",
            "nan",
            "-0",
            "0x7FFFFFFFFFFFFFFF",
            "0o777",
            "0b1",
            "1_000",
            "1__0",
            "1979-05-27",
            "1979-05-27T07:32:00Z",
            "\"\\u0000\"",
            "\"\"",
            "'''\nmulti\n'''",
            "\"\"\"\nx\"\"\"",
            "[1,",
            "[1, \"a\", 2.5]",
            "{a=1}",
            "{}",
            "[]",
            "true",
            "True",
            "\"* * * * *\"",
            "\"every 1h\"",
            "\"Mars/Olympus\"",
            "\"\\uD800\"",
        ])
        .prop_map(str::to_string),
        any::<i64>().prop_map(|n| n.to_string()),
        any::<f64>().prop_map(|x| format!("{x:?}")),
        any::<String>().prop_map(|s| format!("{s:?}")),
        any::<String>(),
    ];
    let line = prop_oneof![
        2 => section,
        1 => array_section,
        6 => (key, value).prop_map(|(k, v)| format!("{k} = {v}")),
        1 => any::<String>(),
    ];
    prop::collection::vec(line, 0..12).prop_map(|lines| lines.join("\n"))
}

proptest! {
    #![proptest_config(config(256, 1))]

    /// TOML-ish text: loaded, or an error (naming a key when it is about a value); never a
    /// panic.
    #[test]
    fn config_any_tomlish_text_loads_or_names_a_key(text in tomlish()) {
        let result = load(&text, None);
        prop_assert!(result.is_ok(), "{}\n---\n{}", result.unwrap_err(), text);
    }
}

proptest! {
    #![proptest_config(config(128, 2))]

    /// The shipped file (examples on) after one to four deletions, replacements with
    /// values of any type and added keys: loaded and checked, or an error naming a key
    /// that was changed (or one that now disagrees with it).
    #[test]
    fn config_mutations_of_the_shipped_file_name_a_key(
        mutations in prop::collection::vec(mutation(), 1..=4),
    ) {
        let mut root = toml::Value::Table(shipped());
        let mut names = Vec::new();
        for m in &mutations {
            names.extend(apply(&mut root, m));
        }
        // A few values TOML itself cannot write (a table after an array of tables…).
        let Ok(text) = toml::to_string(&root) else {
            return Ok(());
        };
        let result = load(&text, Some(&names));
        prop_assert!(result.is_ok(), "{:?}: {}", mutations, result.unwrap_err());
    }
}

// ---------------------------------------------------------------------------------------
// The HTTP API
// ---------------------------------------------------------------------------------------

/// The real router on a database in a temp dir, a user's and an admin's token, and ids of
/// a note, a session and a schedule of that user's.
struct Api {
    rt: tokio::runtime::Runtime,
    router: axum::Router,
    user: String,
    admin: String,
    ids: BTreeMap<&'static str, String>,
    _stop: tokio_util::sync::CancellationToken,
    _app: nightshift::app::App,
    _dir: TempDir,
}

impl Api {
    fn start() -> Self {
        let dir = TempDir::new().unwrap();
        let mut config = Config::default();
        config.database.path = dir.path().join("nightshift.db").display().to_string();
        config.server.rate_per_token = 100_000.0;
        config.server.rate_burst = 1_000_000;
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        nightshift::telemetry::install();
        let app = rt
            .block_on(nightshift::app::App::open(&config))
            .expect("open the app");
        let stop = tokio_util::sync::CancellationToken::new();
        let router = rt.block_on(async { nightshift::api::router(&app, false, &stop) });
        let token = |user: Option<&str>| {
            rt.block_on(app.tokens().create(&NewToken {
                user_id: user.map(str::to_string),
                name: None,
                expires_in_secs: None,
            }))
            .unwrap()
            .secret
        };
        let (user, admin) = (token(Some("alice")), token(None));
        let mut api = Self {
            rt,
            router,
            user,
            admin,
            ids: BTreeMap::new(),
            _stop: stop,
            _app: app,
            _dir: dir,
        };
        let note = api.send_json("POST", "/v1/notes", json!({"text": "seed note"}));
        let schedule = api.send_json("POST", "/v1/schedules", json!({"goal": "g", "every": "1h"}));
        api.send_json(
            "POST",
            "/v1/sessions/chat-1/events",
            json!({"events": [{"role": "user", "content": "hi"}]}),
        );
        api.ids
            .insert("note", note["note_id"].as_str().unwrap().to_string());
        api.ids.insert(
            "schedule",
            schedule["schedule_id"].as_str().unwrap().to_string(),
        );
        api.ids.insert("session", "chat-1".to_string());
        api.ids.insert("message", "msg-none".to_string());
        api
    }

    fn send_json(&self, method: &str, path: &str, body: Value) -> Value {
        let bytes = serde_json::to_vec(&body).unwrap();
        let (status, answer) = self
            .send(
                method,
                path,
                Some(&self.user),
                Some("application/json"),
                bytes,
                true,
            )
            .unwrap();
        assert!(status.is_success(), "{method} {path}: {status} {answer:?}");
        serde_json::from_slice(&answer).unwrap()
    }

    fn send(
        &self,
        method: &str,
        path: &str,
        token: Option<&str>,
        content_type: Option<&str>,
        body: Vec<u8>,
        length: bool,
    ) -> Option<(StatusCode, Vec<u8>)> {
        let mut request = Request::builder().method(method).uri(path);
        if let Some(token) = token {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        if let Some(ct) = content_type {
            request = request.header("content-type", ct);
        }
        if length {
            request = request.header("content-length", body.len());
        }
        // A header the client library itself would refuse to send (a NUL in it).
        let request = request.body(Body::from(body)).ok()?;
        self.rt.block_on(async {
            let response = self.router.clone().oneshot(request).await.unwrap();
            let status = response.status();
            let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
                .await
                .unwrap();
            Some((status, bytes.to_vec()))
        })
    }
}

/// The POST and PATCH routes, the token they are meant for, and a body they accept.
fn routes() -> Vec<(&'static str, &'static str, bool, Value)> {
    vec![
        (
            "POST",
            "/v1/notes",
            false,
            json!({"text": "hello", "tags": ["a"]}),
        ),
        (
            "PATCH",
            "/v1/notes/{note}",
            false,
            json!({"text": "changed"}),
        ),
        (
            "POST",
            "/v1/search",
            false,
            json!({"query": "hello", "top_k": 3}),
        ),
        (
            "POST",
            "/v1/sessions/{session}/events",
            false,
            json!({"events": [{"role": "user", "content": "hi"}]}),
        ),
        (
            "POST",
            "/v1/sessions/{session}/context",
            false,
            json!({"budget": 100, "query": "hi"}),
        ),
        (
            "POST",
            "/v1/schedules",
            false,
            json!({"goal": "g", "every": "1h"}),
        ),
        (
            "PATCH",
            "/v1/schedules/{schedule}",
            false,
            json!({"goal": "g2"}),
        ),
        (
            "POST",
            "/v1/schedules/{schedule}/pause",
            false,
            json!({"note": "n"}),
        ),
        ("POST", "/v1/schedules/{schedule}/resume", false, json!({})),
        ("POST", "/v1/schedules/{schedule}/run-now", false, json!({})),
        (
            "POST",
            "/v1/schedules/{schedule}/trigger",
            false,
            json!({"input": "x", "idempotency_key": "k"}),
        ),
        (
            "POST",
            "/v1/schedules/{schedule}/backfill",
            false,
            json!({"from": "2026-01-01T00:00:00Z", "to": "2026-01-02T00:00:00Z", "dry_run": true}),
        ),
        (
            "PUT",
            "/v1/state/user:{session}",
            false,
            json!({"value": {"a": [1, "b"]}, "expected_version": 0}),
        ),
        (
            "PUT",
            "/v1/state/app:{session}",
            true,
            json!({"value": "x"}),
        ),
        (
            "POST",
            "/v1/artifacts?session={session}&name=data.json",
            false,
            json!({"text": "an artifact's bytes"}),
        ),
        (
            "POST",
            "/v1/notes/{note}/restore",
            false,
            json!({"version": 1}),
        ),
        (
            "POST",
            "/v1/admin/users/{session}/purge",
            true,
            json!({"dry_run": true}),
        ),
        ("POST", "/v1/admin/outbox/{message}/retry", true, json!({})),
        (
            "POST",
            "/v1/admin/consolidation",
            true,
            json!({"passes": ["summaries"], "user": "alice"}),
        ),
    ]
}

/// Every field name of every body, to put random values under.
const FIELDS: &[&str] = &[
    "text",
    "tags",
    "any_tags",
    "no_tags",
    "key_prefix",
    "source",
    "created_after",
    "created_before",
    "updated_after",
    "updated_before",
    "since",
    "until",
    "key",
    "category",
    "query",
    "top_k",
    "session",
    "events",
    "role",
    "content",
    "payload",
    "importance",
    "created_at",
    "budget",
    "strategy",
    "goal",
    "name",
    "cron",
    "tz",
    "every",
    "at",
    "when",
    "channel",
    "notify",
    "overlap",
    "catch_up",
    "max_attempts",
    "timeout_secs",
    "max_turns",
    "max_cost",
    "starts_at",
    "ends_at",
    "max_runs",
    "skip",
    "jitter",
    "catch_up_window",
    "calendars",
    "triggered",
    "after",
    "on",
    "clear",
    "note",
    "from",
    "to",
    "dry_run",
    "input",
    "idempotency_key",
    "passes",
    "user",
    "value",
    "expected_version",
    "version",
];

fn json_value() -> BoxedStrategy<Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        select(vec![
            0i64,
            -1,
            1,
            3,
            5,
            20,
            21,
            100,
            8000,
            8001,
            i64::MAX,
            i64::MIN
        ])
        .prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        select(vec![-0.0, 0.5, 1.0000001, 1e308, 5e-324]).prop_map(Value::from),
        any::<String>().prop_map(Value::from),
        select(vec![
            "",
            " ",
            "alice",
            "bob",
            "chat-1",
            "hello",
            "\u{0}",
            "a\u{1b}[2J",
            "😀",
            "e\u{301}",
            "1h",
            "0s",
            "2305843009213693952s",
            "15m",
            "0 9 * * 1-5",
            "* * * * *",
            "61 * * * *",
            "every weekday at 9am",
            "in 2 hours",
            "tomorrow at 8pm",
            "Europe/Lisbon",
            "Mars/Olympus",
            "2026-01-01T00:00:00Z",
            "1970-01-01T00:00:00Z",
            "9999-12-31T23:59:59Z",
            "2026-02-30",
            "2026-01-01 09:00",
            "skip",
            "allow",
            "buffer_one",
            "cancel_other",
            "always",
            "never",
            "on_failure",
            "conditional",
            "once",
            "all",
            "succeeded",
            "failed",
            "finished",
            "user",
            "assistant",
            "tool",
            "system",
            "robot",
            "buffer_window",
            "token_window",
            "summary_buffer",
            "expiry",
            "prune",
            "backfill",
            "optimize",
            "snapshot",
            "timeout_secs",
            "max_runs",
            "calendars",
            "summaries",
            "facts",
            "retention",
            "log",
            "log:x",
            "telegram:1",
            "sch-x",
            "note-x",
        ])
        .prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            prop::collection::btree_map(
                prop_oneof![select(FIELDS).prop_map(str::to_string), "\\PC{0,8}"],
                inner,
                0..4,
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
    .boxed()
}

/// A request body: the route's own with fields changed (`Some`) or removed (`None`), or
/// bytes as they are.
#[derive(Debug, Clone)]
enum Payload {
    Edits(Vec<(&'static str, Option<Value>)>),
    Raw(Vec<u8>),
}

/// The route's own body edited; any object of the API's field names; any JSON; bytes that
/// are not JSON.
fn body() -> impl Strategy<Value = Payload> {
    let json = |v: Value| Payload::Raw(serde_json::to_vec(&v).unwrap());
    prop_oneof![
        6 => prop::collection::vec((select(FIELDS), prop::option::of(json_value())), 0..4)
            .prop_map(Payload::Edits),
        2 => prop::collection::btree_map(select(FIELDS), json_value(), 0..6).prop_map(move |m| {
            json(Value::Object(m.into_iter().map(|(k, v)| (k.to_string(), v)).collect()))
        }),
        1 => json_value().prop_map(json),
        1 => prop::collection::vec(any::<u8>(), 0..64).prop_map(Payload::Raw),
        1 => any::<String>().prop_map(|s| Payload::Raw(s.into_bytes())),
        1 => select(vec![
            "", "{", "}", "{\"text\":", "[", "null", "{\"text\": \"a\" \"b\"}", "\u{feff}{}",
            "{\"text\": \"\\ud800\"}", "{\"top_k\": 1e400}", "{\"text\": \"x\", \"text\": \"y\"}",
        ])
        .prop_map(|s| Payload::Raw(s.as_bytes().to_vec())),
        1 => (1usize..50_000).prop_map(|n| Payload::Raw("[".repeat(n).into_bytes())),
    ]
}

/// One request: which route, which token, body, content type, path ids and query.
#[derive(Debug, Clone)]
struct Call {
    route: usize,
    token: u8,
    body: Payload,
    content_type: Option<&'static str>,
    length: bool,
    id: Option<String>,
    user: Option<String>,
}

fn call() -> impl Strategy<Value = Call> {
    (
        0..routes().len(),
        0u8..10,
        body(),
        prop_oneof![
            8 => Just(Some("application/json")),
            1 => Just(None),
            1 => select(vec![
                "text/plain", "", "application/json; charset=utf-8", "APPLICATION/JSON",
                "application/x-www-form-urlencoded", "application/vnd.api+json",
                "application/json; charset=latin1", "multipart/form-data", "*/*",
            ])
            .prop_map(Some),
        ],
        prop_oneof![9 => Just(true), 1 => Just(false)],
        prop_oneof![4 => Just(None), 1 => any::<String>().prop_map(Some), 1 => "\\PC{0,300}".prop_map(Some)],
        prop_oneof![4 => Just(None), 1 => prop_oneof![Just("alice".to_string()), Just("bob".to_string()), any::<String>()].prop_map(Some)],
    )
        .prop_map(|(route, token, body, content_type, length, id, user)| Call {
            route,
            token,
            body,
            content_type,
            length,
            id,
            user,
        })
}

fn api_case(api: &Api, c: &Call) -> Result<(), String> {
    let routes = routes();
    let (method, template_path, admin_route, template) = &routes[c.route];
    let mut path = template_path.to_string();
    for (name, id) in &api.ids {
        let id = match &c.id {
            Some(random) => utf8_percent_encode(random, NON_ALPHANUMERIC).to_string(),
            None => id.clone(),
        };
        path = path.replace(&format!("{{{name}}}"), &id);
    }
    if let Some(user) = &c.user {
        path = format!(
            "{path}?user={}",
            utf8_percent_encode(user, NON_ALPHANUMERIC)
        );
    }
    let token = match (c.token, admin_route) {
        (0, _) => None,
        (1, _) => Some("ns_not_a_token"),
        (2, false) | (3..=9, true) => Some(api.admin.as_str()),
        _ => Some(api.user.as_str()),
    };
    let bytes = match &c.body {
        Payload::Edits(edits) => {
            let mut body = template.clone();
            for (field, value) in edits {
                match value {
                    Some(v) => body[*field] = v.clone(),
                    None => {
                        body.as_object_mut().map(|o| o.remove(*field));
                    }
                }
            }
            serde_json::to_vec(&body).unwrap()
        }
        Payload::Raw(raw) => raw.clone(),
    };
    api_answer(api, method, &path, token, c.content_type, bytes, c.length)
}

/// Sends one request and checks the answer: 2xx (JSON or empty) or 4xx with the JSON error
/// body.
fn api_answer(
    api: &Api,
    method: &str,
    path: &str,
    token: Option<&str>,
    content_type: Option<&str>,
    bytes: Vec<u8>,
    length: bool,
) -> Result<(), String> {
    let Some((status, answer)) = api.send(method, path, token, content_type, bytes.clone(), length)
    else {
        return Ok(());
    };
    let shown = || {
        format!(
            "{method} {path} {:?}: {status} {}",
            String::from_utf8_lossy(&bytes),
            String::from_utf8_lossy(&answer)
        )
    };
    if status.is_server_error() {
        return Err(format!("a server error: {}", shown()));
    }
    if !(status.is_success() || status.is_client_error()) {
        return Err(format!("neither 2xx nor 4xx: {}", shown()));
    }
    // Some successes have no body (204, the 202 of a consolidation run).
    if answer.is_empty() && status.is_success() {
        return Ok(());
    }
    let body: Value =
        serde_json::from_slice(&answer).map_err(|e| format!("not JSON ({e}): {}", shown()))?;
    if status.is_client_error()
        && !(body["error"]["code"].is_string() && body["error"]["message"].is_string())
    {
        return Err(format!("not the JSON error body: {}", shown()));
    }
    Ok(())
}

/// Random bodies, content types, tokens, ids and `?user=` to every POST and PATCH route:
/// 2xx or 4xx with a JSON error body, never a 5xx or a panic.
#[test]
fn api_requests_are_answered_2xx_or_4xx_never_5xx() {
    let api = Api::start();
    // First the extremes: the widest backfill, bodies at the limits, deep nesting.
    let schedule = format!("/v1/schedules/{}", api.ids["schedule"]);
    let big = |n: usize| "x".repeat(n);
    let many_events: Vec<Value> = (0..10_001)
        .map(|i| json!({"role": "user", "content": i.to_string()}))
        .collect();
    let fixed: Vec<(&str, String, Value)> = vec![
        (
            "POST",
            format!("{schedule}/backfill"),
            json!({"from": "1970-01-01T00:00:00Z", "to": "9999-12-31T23:59:59Z", "dry_run": true}),
        ),
        (
            "POST",
            format!("{schedule}/backfill"),
            json!({"from": "1970-01-01", "to": "2026-01-01"}),
        ),
        (
            "POST",
            format!("{schedule}/backfill"),
            json!({"from": "2026-01-02", "to": "2026-01-01"}),
        ),
        (
            "POST",
            "/v1/schedules".into(),
            json!({"goal": "g", "cron": "* * * * *"}),
        ),
        (
            "POST",
            "/v1/schedules".into(),
            json!({"goal": "g", "every": "1s", "jitter": "3650d"}),
        ),
        (
            "POST",
            "/v1/schedules".into(),
            json!({"goal": big(16 * 1024 + 1), "every": "1h"}),
        ),
        (
            "POST",
            format!("{schedule}/trigger"),
            json!({"input": big(1 << 20), "idempotency_key": big(300)}),
        ),
        (
            "POST",
            "/v1/sessions/chat-2/events".into(),
            json!({"events": many_events}),
        ),
        ("POST", "/v1/search".into(), json!({"query": big(4097)})),
        (
            "POST",
            "/v1/search".into(),
            json!({"query": "x", "top_k": u64::MAX}),
        ),
        (
            "POST",
            "/v1/sessions/chat-1/context".into(),
            json!({"budget": u64::MAX, "strategy": "summary_buffer"}),
        ),
        (
            "PATCH",
            schedule.clone(),
            json!({"clear": ["name", "channel", "timeout_secs", "max_turns", "max_cost", "starts_at", "ends_at", "max_runs", "skip", "jitter", "catch_up_window", "after", "calendars"]}),
        ),
        (
            "PATCH",
            schedule.clone(),
            json!({"after": api.ids["schedule"]}),
        ),
    ];
    for (method, path, body) in fixed {
        let bytes = serde_json::to_vec(&body).unwrap();
        let result = api_answer(
            &api,
            method,
            &path,
            Some(&api.user),
            Some("application/json"),
            bytes,
            true,
        );
        assert!(result.is_ok(), "{}", result.unwrap_err());
    }
    let nested = "[".repeat(200_000).into_bytes();
    let over = vec![b' '; 4 * 1024 * 1024 + 1];
    for bytes in [nested, over] {
        let result = api_answer(
            &api,
            "POST",
            "/v1/notes",
            Some(&api.user),
            Some("application/json"),
            bytes,
            true,
        );
        assert!(result.is_ok(), "{}", result.unwrap_err());
    }
    props::check("api_requests", config(96, 8), call(), |c| {
        api_case(&api, &c).map_err(TestCaseError::fail)
    });
}
