//! Macros: tool chains planted in synthetic scheduled-run transcripts (mixed with seeded
//! random noise) are learned by the `macros` pass, per user, incrementally, and fade when
//! they stop; the openai runtime hints at them. `cargo test --test macros -- --nocapture`
//! prints the precision and recall.

mod common;

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::routing::post;
use axum::{Json, Router};
use nightshift::config::{Config, RuntimeConfig, RuntimeKind};
use nightshift::consolidate::{Consolidator, Pass, PassReport};
use nightshift::db::clock::ManualClock;
use nightshift::memory::{Macro, Memory, NewEvent, Role};
use nightshift::runtime::{AgentRuntime, GoalRequest, OpenAiRuntime};
use serde_json::{json, Value};
use tempfile::TempDir;

const START: i64 = 1_800_000_000_000;

/// A small xorshift: the transcripts are the same on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn chance(&mut self, p: f64) -> bool {
        (self.next() % 1_000_000) as f64 / 1_000_000.0 < p
    }
}

/// A call: tool and arguments.
type Call = (&'static str, Value);

/// A planted chain: its calls, in order.
struct Plant {
    calls: fn(&mut Rng) -> Vec<Call>,
}

fn search_then_save(rng: &mut Rng) -> Vec<Call> {
    vec![
        (
            "memory_search",
            json!({"query": format!("q{}", rng.below(100))}),
        ),
        (
            "memory_save",
            json!({"content": format!("c{}", rng.below(100)), "tags": ["daily"]}),
        ),
    ]
}

fn calendar_weather_notify(rng: &mut Rng) -> Vec<Call> {
    vec![
        (
            "calendar_read",
            json!({"day": format!("d{}", rng.below(7))}),
        ),
        ("weather", json!({"city": "Lisbon"})),
        ("notify", json!({"channel": "ops", "text": "x"})),
    ]
}

fn list_then_forget(rng: &mut Rng) -> Vec<Call> {
    vec![
        ("notes_list", json!({"limit": 10})),
        (
            "memory_forget",
            json!({"note_id": format!("n{}", rng.below(50))}),
        ),
    ]
}

const NOISE: [&str; 10] = [
    "web_fetch",
    "clock_now",
    "file_read",
    "file_write",
    "shell_run",
    "http_get",
    "translate",
    "summarize",
    "math_eval",
    "image_describe",
];

fn noise_call(rng: &mut Rng) -> Call {
    let tool = NOISE[rng.below(NOISE.len())];
    let args = match rng.below(3) {
        0 => json!({}),
        1 => json!({"input": rng.below(1000)}),
        _ => json!({"input": rng.below(1000), "mode": "fast"}),
    };
    (tool, args)
}

/// One run's calls: segments, each a planted chain (followed through at `follow`,
/// else cut after its first call and continued by noise) or one to three noise calls.
fn run_calls(rng: &mut Rng, plants: &[Plant], follow: f64) -> Vec<Call> {
    let mut calls = Vec::new();
    for _ in 0..1 + rng.below(3) {
        if rng.chance(0.5) {
            let mut chain = (plants[rng.below(plants.len())].calls)(rng);
            if !rng.chance(follow) {
                chain.truncate(1);
            }
            calls.extend(chain);
        } else {
            for _ in 0..1 + rng.below(3) {
                calls.push(noise_call(rng));
            }
        }
    }
    calls
}

/// A run's transcript as the openai runtime stores it: the goal, then one assistant turn
/// per call (OpenAI format) with its tool result, then the answer.
fn transcript(calls: &[Call], at: i64) -> Vec<NewEvent> {
    let event = |role, content: &str, payload: Option<Value>| NewEvent {
        role,
        content: content.to_string(),
        payload,
        importance: None,
        created_at: Some(at),
        name: None,
    };
    let mut events = vec![event(Role::User, "do the daily task", None)];
    for (i, (tool, args)) in calls.iter().enumerate() {
        let id = format!("call_{i}");
        let call = json!({"id": id, "type": "function",
            "function": {"name": tool, "arguments": args.to_string()}});
        events.push(event(
            Role::Assistant,
            "(tool calls)",
            Some(json!({"tool_calls": [call]})),
        ));
        events.push(event(
            Role::Tool,
            "{\"ok\":true}",
            Some(json!({"tool_call_id": id, "name": tool})),
        ));
    }
    events.push(event(Role::Assistant, "done", None));
    events
}

struct Setup {
    _dir: TempDir,
    memory: Memory,
    consolidator: Consolidator,
    clock: Arc<ManualClock>,
    at: i64,
}

async fn setup(adjust: impl FnOnce(&mut Config)) -> Setup {
    let dir = TempDir::new().unwrap();
    let mut config = common::config_in(&dir);
    adjust(&mut config);
    let clock = ManualClock::starting_at(START);
    let app = common::app_with(&config, Some(clock.clone())).await;
    Setup {
        memory: app.memory().clone(),
        consolidator: app.consolidator(Some("w".into())),
        _dir: dir,
        clock,
        at: START,
    }
}

impl Setup {
    /// Stores `runs` runs of `user`'s schedule `schedule`, each in one append.
    async fn runs(
        &mut self,
        user: &str,
        schedule: &str,
        runs: usize,
        mut calls: impl FnMut() -> Vec<Call>,
    ) {
        let session = format!("scheduled:{schedule}");
        for _ in 0..runs {
            self.at += 60_000;
            let events = transcript(&calls(), self.at);
            self.memory
                .append_transcript(user, &session, &events)
                .await
                .unwrap();
        }
        self.clock.advance_ms(60_000);
    }

    async fn pass(&self) -> PassReport {
        let mut reports = self
            .consolidator
            .run(&[Pass::Macros], None, None)
            .await
            .unwrap();
        let report = reports.remove(0);
        assert_eq!(report.status, "succeeded", "{report:?}");
        report
    }

    async fn macros(&self, user: &str) -> Vec<Macro> {
        self.memory.macros(user).await.unwrap().macros
    }

    /// Every stored row of the macro tables, as text.
    async fn tables(&self) -> Vec<String> {
        let conn = self.memory.db().conn().await.unwrap();
        let mut out = Vec::new();
        for sql in [
            "SELECT user_id || trigger_tool || trigger_args_pattern || next_tool || next2_tool
             || next_args_json || support || trigger_runs || confidence || seen_count
             || promoted || last_seen_at || updated_at FROM macros ORDER BY 1",
            "SELECT user_id || trigger_tool || trigger_args_pattern || runs || last_seen_at
             FROM macro_triggers ORDER BY 1",
            "SELECT user_id || session_id || upper_sequence FROM macro_cursors ORDER BY 1",
        ] {
            let mut rows = conn.query(sql, ()).await.unwrap();
            while let Some(row) = rows.next().await.unwrap() {
                out.push(row.get::<String>(0).unwrap());
            }
        }
        out
    }
}

/// A macro as (trigger, next, next2).
fn chain_of(found: &Macro) -> (String, String, String) {
    (
        found.trigger_tool.clone(),
        found.next_tool.clone(),
        found.next2_tool.clone().unwrap_or_default(),
    )
}

fn chains(list: &[(&str, &str, &str)]) -> BTreeSet<(String, String, String)> {
    list.iter()
        .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()))
        .collect()
}

#[tokio::test]
async fn planted_chains_are_learned_per_user_and_noise_is_not() {
    let mut s = setup(|_| {}).await;
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let alice = [
        Plant {
            calls: search_then_save,
        },
        Plant {
            calls: calendar_weather_notify,
        },
    ];
    let bob = [Plant {
        calls: list_then_forget,
    }];
    // Two schedules of alice's, one of bob's, their runs in a few passes.
    for _ in 0..3 {
        s.runs("alice", "alice-daily", 20, || {
            run_calls(&mut rng, &alice, 0.9)
        })
        .await;
        s.runs("alice", "alice-hourly", 15, || {
            run_calls(&mut rng, &alice, 0.9)
        })
        .await;
        s.runs("bob", "bob-daily", 20, || run_calls(&mut rng, &bob, 0.9))
            .await;
        s.pass().await;
    }

    let planted = [
        (
            "alice",
            chains(&[
                ("memory_search", "memory_save", ""),
                ("calendar_read", "weather", ""),
                ("weather", "notify", ""),
                ("calendar_read", "weather", "notify"),
            ]),
        ),
        ("bob", chains(&[("notes_list", "memory_forget", "")])),
    ];
    let (mut planted_n, mut found_n, mut true_n) = (0, 0, 0);
    for (user, planted) in &planted {
        let found: BTreeSet<_> = s.macros(user).await.iter().map(chain_of).collect();
        let hits = found.intersection(planted).count();
        eprintln!(
            "{user}: planted {}, found {}, true {hits}, false {:?}",
            planted.len(),
            found.len(),
            found.difference(planted).collect::<Vec<_>>()
        );
        planted_n += planted.len();
        found_n += found.len();
        true_n += hits;
    }
    let recall = true_n as f64 / planted_n as f64;
    let precision = true_n as f64 / found_n.max(1) as f64;
    eprintln!(
        "macros: planted {planted_n}, found {found_n}, true {true_n}, false {}; \
         precision {precision:.3}, recall {recall:.3}",
        found_n - true_n
    );
    assert_eq!(recall, 1.0);
    assert!(precision >= 0.9, "precision {precision}");

    // What is learned from one user's runs is that user's only, candidates included.
    let conn = s.memory.db().conn().await.unwrap();
    let crossed: i64 = nightshift::db::query_scalar(
        &conn,
        "SELECT count(*) FROM macros WHERE
         (user_id = 'alice' AND trigger_tool IN ('notes_list', 'memory_forget'))
         OR (user_id = 'bob' AND trigger_tool IN
             ('memory_search', 'memory_save', 'calendar_read', 'weather', 'notify'))",
        (),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(crossed, 0);
    drop(conn);
    assert!(s.macros("carol").await.is_empty());

    // The arguments template keeps what recurs and blanks what varies.
    let save = s
        .macros("alice")
        .await
        .into_iter()
        .find(|m| m.next_tool == "memory_save" && m.next2_tool.is_none())
        .unwrap();
    assert_eq!(save.trigger_args_pattern, "query");
    assert_eq!(save.next_args, json!({"content": null, "tags": ["daily"]}));
    assert!(save.confidence >= 0.6 && save.support >= 3.0, "{save:?}");

    // A second pass over nothing new changes nothing.
    let before = s.tables().await;
    let again = s.pass().await;
    assert_eq!(s.tables().await, before);
    assert!(again.counts.get("runs").is_none(), "{:?}", again.counts);
}

#[tokio::test]
async fn learning_in_one_pass_or_many_gives_the_same_macros() {
    let mut once = setup(|_| {}).await;
    let mut many = setup(|_| {}).await;
    let plants = [Plant {
        calls: search_then_save,
    }];
    let (mut a, mut b) = (Rng(7), Rng(7));
    for _ in 0..4 {
        once.runs("u", "s", 10, || run_calls(&mut a, &plants, 0.8))
            .await;
        many.runs("u", "s", 10, || run_calls(&mut b, &plants, 0.8))
            .await;
        many.pass().await;
    }
    once.pass().await;
    let macros = once.macros("u").await;
    assert!(!macros.is_empty());
    assert_eq!(macros, many.macros("u").await);
}

#[tokio::test]
async fn a_chain_that_stops_occurring_fades_and_is_forgotten() {
    let mut s = setup(|_| {}).await;
    s.runs("u", "s", 20, || {
        vec![
            ("memory_search", json!({"query": "a"})),
            ("memory_save", json!({"content": "b"})),
        ]
    })
    .await;
    let first = s.pass().await;
    assert_eq!(first.counts["promoted"], 1, "{:?}", first.counts);
    assert_eq!(s.macros("u").await.len(), 1);

    // From now on, runs search and then do something else.
    let mut passes = 0;
    let mut demoted_after = None;
    while passes < 30 {
        s.runs("u", "s", 5, || {
            vec![
                ("memory_search", json!({"query": "a"})),
                ("memory_update", json!({"note_id": "n"})),
            ]
        })
        .await;
        let report = s.pass().await;
        passes += 1;
        let listed = s.macros("u").await;
        if demoted_after.is_none() && !listed.iter().any(|m| m.next_tool == "memory_save") {
            demoted_after = Some(passes);
            assert_eq!(report.counts["demoted"], 1, "{:?}", report.counts);
        }
        let conn = s.memory.db().conn().await.unwrap();
        let rows: i64 = nightshift::db::query_scalar(
            &conn,
            "SELECT count(*) FROM macros WHERE user_id = 'u' AND next_tool = 'memory_save'",
            (),
        )
        .await
        .unwrap()
        .unwrap();
        if rows == 0 {
            assert_eq!(report.counts["removed"], 1, "{:?}", report.counts);
            break;
        }
    }
    eprintln!("decay: demoted after {demoted_after:?} passes of 5 runs, removed after {passes}");
    assert!(demoted_after.is_some_and(|n| n <= 3), "{demoted_after:?}");
    assert!(passes < 30, "never forgotten");
    // What replaced it is learned in its place.
    let listed = s.macros("u").await;
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].next_tool, "memory_update");
}

/// Records each request body and answers with the next of `answers`.
async fn fake_model(answers: Vec<Value>) -> (String, Arc<Mutex<Vec<Value>>>) {
    type Shared = (Arc<Mutex<Vec<Value>>>, Arc<Vec<Value>>);
    async fn answer(State((seen, answers)): State<Shared>, Json(body): Json<Value>) -> Json<Value> {
        let n = {
            let mut seen = seen.lock().unwrap();
            seen.push(body);
            seen.len() - 1
        };
        let message = answers[n.min(answers.len() - 1)].clone();
        Json(json!({"choices": [{"message": message}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1}}))
    }
    let seen = Arc::new(Mutex::new(Vec::new()));
    let app = Router::new()
        .route("/v1/chat/completions", post(answer))
        .with_state((seen.clone(), Arc::new(answers)));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}/v1"), seen)
}

fn goal(user: &str) -> GoalRequest {
    GoalRequest {
        run_id: "run-1".into(),
        schedule_id: "sch-1".into(),
        user_id: user.into(),
        goal: "do the daily task".into(),
        session_id: "scheduled:sch-1".into(),
        context: String::new(),
        input: None,
        agent_id: None,
        max_turns: 4,
        tools: Vec::new(),
        approve: Vec::new(),
        resume: None,
        max_cost: None,
        progress: Default::default(),
        memory_as_of: None,
    }
}

/// The system messages of each request the model received.
fn system_hints(seen: &Mutex<Vec<Value>>) -> Vec<Vec<String>> {
    seen.lock()
        .unwrap()
        .iter()
        .map(|body| {
            body["messages"]
                .as_array()
                .unwrap()
                .iter()
                .skip(1)
                .filter(|m| m["role"] == "system")
                .map(|m| m["content"].as_str().unwrap().to_string())
                .collect()
        })
        .collect()
}

#[tokio::test]
async fn the_openai_runtime_hints_at_the_users_macro_after_its_trigger() {
    let mut s = setup(|_| {}).await;
    s.runs("alice", "alice-daily", 10, || {
        vec![
            ("memory_search", json!({"query": "weather"})),
            (
                "memory_save",
                json!({"content": "sunny", "tags": ["daily"]}),
            ),
        ]
    })
    .await;
    s.pass().await;
    let call = json!({"role": "assistant", "content": null, "tool_calls": [{
        "id": "call_1", "type": "function",
        "function": {"name": "memory_search", "arguments": "{\"query\": \"rain\"}"}}]});
    let done = json!({"role": "assistant", "content": "done"});
    let config = |url: String, min: f64| RuntimeConfig {
        kind: RuntimeKind::Openai,
        base_url: url,
        model: "m".into(),
        timeout_secs: 5,
        max_retries: 0,
        macro_hint_min_confidence: min,
        ..Default::default()
    };

    let (url, seen) = fake_model(vec![call.clone(), done.clone()]).await;
    let runtime = OpenAiRuntime::new(&config(url, 0.8)).unwrap();
    let outcome = runtime.run_goal(&goal("alice"), &s.memory).await;
    assert_eq!(outcome.error, None);
    let hints = system_hints(&seen);
    assert_eq!(hints.len(), 2);
    assert!(hints[0].is_empty(), "{hints:?}");
    assert_eq!(hints[1].len(), 1, "{hints:?}");
    assert!(
        hints[1][0].starts_with(
            "After `memory_search`, runs for this user usually call `memory_save` next"
        ),
        "{}",
        hints[1][0]
    );
    assert!(hints[1][0].contains("tags=[\"daily\"]"), "{}", hints[1][0]);
    assert_eq!(s.macros("alice").await[0].use_count, 1);

    // Another user has no such macro; a threshold of 0 turns hints off.
    for (user, min) in [("bob", 0.8), ("alice", 0.0)] {
        let (url, seen) = fake_model(vec![call.clone(), done.clone()]).await;
        let runtime = OpenAiRuntime::new(&config(url, min)).unwrap();
        assert_eq!(runtime.run_goal(&goal(user), &s.memory).await.error, None);
        assert!(system_hints(&seen).iter().all(Vec::is_empty), "{user}");
    }
}

#[tokio::test]
async fn the_cli_lists_a_users_macros_only() {
    let mut s = setup(|_| {}).await;
    s.runs("alice", "alice-daily", 6, || {
        vec![
            ("memory_search", json!({"query": "q"})),
            ("memory_save", json!({"content": "c"})),
        ]
    })
    .await;
    s.pass().await;
    let db = common::database_in(&s._dir);
    let list = |user: &str, json: bool| {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_nightshift"));
        command
            .env_remove("NIGHTSHIFT_CONFIG")
            .arg("--db")
            .arg(&db)
            .args(["macros", "list", "--user", user]);
        if json {
            command.arg("--json");
        }
        let out = command.output().unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let alice: Value = serde_json::from_str(&list("alice", true)).unwrap();
    assert_eq!(alice["user_id"], "alice");
    assert_eq!(alice["macros"][0]["trigger_tool"], "memory_search");
    assert_eq!(alice["macros"][0]["next_tool"], "memory_save");
    assert_eq!(alice["macros"][0]["confidence"], 1.0);
    let text = list("alice", false);
    assert!(
        text.starts_with("memory_search(query) -> memory_save  confidence 1.00"),
        "{text}"
    );
    let bob: Value = serde_json::from_str(&list("bob", true)).unwrap();
    assert_eq!(bob["macros"], json!([]));
}
