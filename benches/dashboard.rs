//! `cargo bench --bench dashboard`: the dashboard's page budgets — each page under 100 KB
//! (100,000 bytes) and under 50 ms of server time — at 10,000 schedules and 100,000 runs.
//!
//! One database, seeded as an operator's would look after a week: 10,000 schedules of 200
//! users made through the library with the cadences people give (hourly, every 6 h, daily
//! at a time, weekdays, weekly, weekends, every 2 days, some every 15 minutes, triggered and
//! one-off ones, in five zones; a few paused), then 100,000 runs of the past seven days
//! written in batches at the occurrences their cadences gave (the newest kept): mostly
//! succeeded, some failed, skipped, cancelled, timed out or interrupted, each with its start,
//! finish, a few hundred characters of output, turns, tokens and cost; a few running and
//! waiting on an approval, 150 approvals answered; two runs' progress (a typical one, and
//! one at the default limits: 8 turns, 64 tool calls); 300 outbox messages of runs over
//! the week (delivered, dead, the newest few pending); memory for 240 users, three of them
//! heavy (180 notes, some with four versions; five conversations, one of about 400 events;
//! state and artifacts).
//!
//! Then every dashboard page that answers HTML is read over keep-alive by one client on
//! 127.0.0.1, logged in as an admin: 2 warm-ups, then 30 requests each. The time is the
//! client's, from the request to the body's last byte, so it bounds the server's from
//! above. Each answer must be 200 with the page's content type; the times are reported,
//! not asserted. Prints a table, then `name=value` pairs as its last line.

use std::time::{Duration, Instant};

use nightshift::access::Actor;
use nightshift::app::App;
use nightshift::approval::LinkAction;
use nightshift::artifact::NewArtifact;
use nightshift::config::Config;
use nightshift::memory::{NewEvent, NewNote, Role, SaveOutcome};
use nightshift::notify::outbox::{enqueue_in, NewMessage, NotifyPlan, Priority};
use nightshift::schedule::types::NewSchedule;
use nightshift::schedule::{Cadence, CadenceSpec};
use nightshift::state::StateAccess;
use nightshift::tokens::NewToken;
use reqwest::header::{CONTENT_TYPE, COOKIE, ORIGIN, SET_COOKIE};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

mod common;
use common::{percentile, Language, Rng};

const SCHEDULES: usize = 10_000;
const USERS: usize = 200;
const RUNS: usize = 100_000;
/// How far back the runs go.
const HISTORY_MS: i64 = 7 * DAY_MS;
const DAY_MS: i64 = 86_400_000;
/// Users with a little memory besides the schedules' users (the memory list shows 200).
const CHAT_ONLY_USERS: usize = 40;
/// Users with a lot of memory: the pages of the first one are read.
const HEAVY_USERS: usize = 3;
const OUTBOX_MESSAGES: usize = 300;
const PENDING_APPROVALS: usize = 20;
const ANSWERED_APPROVALS: usize = 150;
const RUNNING: usize = 10;

const WARM_UPS: usize = 2;
const SAMPLES: usize = 30;
const BUDGET_BYTES: usize = 100_000;
const BUDGET_MS: f64 = 50.0;

const HTML: &str = "text/html";

/// The cadences schedules are made with, and how many of the 10,000 have each (about
/// 105,000 occurrences in the week; the newest 100,000 are kept).
fn cadence_mix() -> Vec<(usize, CadenceSpec<'static>)> {
    let when = |text| CadenceSpec {
        when: Some(text),
        ..Default::default()
    };
    let every = |text| CadenceSpec {
        every: Some(text),
        ..Default::default()
    };
    let cron = |expr| CadenceSpec {
        cron: Some(expr),
        ..Default::default()
    };
    vec![
        (8, cron("*/15 * * * *")),
        (75, when("hourly")),
        (75, every("1h")),
        (40, when("every 30 minutes")),
        (400, every("6h")),
        (200, cron("0 */4 * * *")),
        (500, when("every 12 hours")),
        (1_200, when("daily at 09:00")),
        (800, when("every day at 7am")),
        (800, when("daily at 18:30")),
        (1_800, when("every weekday at 8am")),
        (1_500, when("every monday at 10:00")),
        (600, when("weekends at 11am")),
        (1_000, when("every 2 days")),
        (202, cron("0 9 1 * *")),
        (
            500,
            CadenceSpec {
                triggered: true,
                ..Default::default()
            },
        ),
        (300, when("in 3 days")),
    ]
}

const ZONES: [&str; 5] = [
    "UTC",
    "Europe/Berlin",
    "America/New_York",
    "Asia/Tokyo",
    "Europe/London",
];

const NAMES: [&str; 12] = [
    "Morning briefing",
    "Inbox triage",
    "Standup notes",
    "Price watch",
    "Weekly report",
    "Backup check",
    "News digest",
    "Plant watering",
    "Invoice reminder",
    "Calendar sweep",
    "Feed summary",
    "Server health",
];

const ERRORS: [&str; 6] = [
    "runtime answered 502 Bad Gateway: upstream connect error or disconnect/reset before headers",
    "the model asked for tool `calendar__list_events`, which this schedule may not use",
    "tool `web__fetch` failed: connection refused (os error 111) after 3 tries",
    "runtime answered 429 Too Many Requests: rate limit reached for requests per minute",
    "the run's cost reached its max_cost of 0.50 before the goal was done",
    "the model's answer was not valid JSON: expected value at line 1 column 1",
];

/// One run to write: the fields of `schedule_runs` the seed sets.
struct SeedRun {
    schedule: usize,
    scheduled_for: i64,
}

/// A page to read: its label, its key in the `name=value` line, its path, the content
/// type it must answer with.
struct Target {
    label: String,
    key: &'static str,
    path: String,
    content_type: &'static str,
}

struct Measured {
    target: Target,
    bytes: usize,
    p50: f64,
    p95: f64,
}

fn pick<'a, T>(rng: &mut Rng, items: &'a [T]) -> &'a T {
    &items[(rng.next() % items.len() as u64) as usize]
}

fn between(rng: &mut Rng, low: i64, high: i64) -> i64 {
    low + (rng.next() % (high - low) as u64) as i64
}

/// A run id as a worker makes it (`run-<uuidv7>`), its time the run's start.
fn run_id_at(ms: i64) -> String {
    let ts = uuid::Timestamp::from_unix(
        uuid::NoContext,
        (ms / 1000) as u64,
        ((ms % 1000) * 1_000_000) as u32,
    );
    format!("run-{}", uuid::Uuid::new_v7(ts))
}

/// Every occurrence of `cadence` in `[from, until)`, oldest first.
fn occurrences(cadence: &Cadence, from: i64, until: i64) -> Vec<i64> {
    let mut found = Vec::new();
    match cadence {
        // An interval's first run is an interval after it was made: its past ones are
        // whole intervals before that.
        Cadence::Interval {
            every_secs, anchor, ..
        } => {
            let every = every_secs * 1000;
            let mut at = *anchor;
            while at >= from {
                if at < until {
                    found.push(at);
                }
                at -= every;
            }
            found.reverse();
        }
        _ => {
            let mut at = from - 1;
            while let Some(next) = cadence.next_after(at) {
                if next >= until {
                    break;
                }
                found.push(next);
                at = next;
            }
        }
    }
    found
}

#[tokio::main]
async fn main() {
    let dir = tempfile::TempDir::new().unwrap();
    let mut config = Config::default();
    config.database.path = dir.path().join("bench.db").display().to_string();
    config.server.listen = "127.0.0.1:0".into();
    config.server.rate_per_token = 100_000.0;
    config.server.rate_burst = 1_000_000;
    config.scheduler.max_per_user = 1_000;
    let app = App::open(&config).await.unwrap();
    let lang = Language::new();
    let mut rng = Rng(0xda5b0a4d);
    let seeding = Instant::now();

    // Schedules, through the library.
    eprintln!("creating {SCHEDULES} schedules…");
    let mut kinds: Vec<CadenceSpec> = cadence_mix()
        .into_iter()
        .flat_map(|(n, spec)| std::iter::repeat_n(spec, n))
        .collect();
    assert_eq!(kinds.len(), SCHEDULES);
    for i in (1..kinds.len()).rev() {
        let j = (rng.next() % (i as u64 + 1)) as usize;
        kinds.swap(i, j);
    }
    let store = app.schedules().clone();
    let mut schedules = Vec::with_capacity(SCHEDULES);
    for (i, kind) in kinds.iter().enumerate() {
        let now = app.clock().now_ms();
        let spec = CadenceSpec {
            tz: Some(ZONES[i % ZONES.len()]),
            ..*kind
        };
        let (cadence, cadence_text) = spec.resolve(now, "UTC").unwrap();
        let goal_chars = between(&mut rng, 80, 260) as usize;
        let goal = format!("Check and report: {}", lang.sentence(&mut rng, goal_chars));
        let mut new = NewSchedule::new(format!("user-{:03}", i % USERS), goal, cadence);
        new.cadence_text = cadence_text;
        if rng.unit() < 0.6 {
            new.name = Some(format!("{} {}", pick(&mut rng, &NAMES), i));
        }
        schedules.push(store.create(&Actor::Operator, &new).await.unwrap());
        if (i + 1) % 2_000 == 0 {
            eprintln!("  {} schedules, {:.0?}", i + 1, seeding.elapsed());
        }
    }
    for s in schedules.iter().step_by(33) {
        store
            .pause(
                &Actor::Operator,
                &s.schedule_id,
                Some("paused by the owner"),
            )
            .await
            .unwrap();
    }

    // Runs: the occurrences of the past week, the newest RUNS of them.
    let seed_now = app.clock().now_ms();
    let until = seed_now - 60_000;
    let mut occurred: Vec<SeedRun> = Vec::new();
    for (i, s) in schedules.iter().enumerate() {
        for at in occurrences(&s.cadence, seed_now - HISTORY_MS, until) {
            occurred.push(SeedRun {
                schedule: i,
                scheduled_for: at,
            });
        }
    }
    let occurrences_in_week = occurred.len();
    occurred.sort_by_key(|r| std::cmp::Reverse(r.scheduled_for));
    occurred.truncate(RUNS);
    assert_eq!(occurred.len(), RUNS, "the cadences give too few runs");
    // The busiest schedule's page is read; the newest runs of the hourly and faster ones
    // are the running and waiting runs.
    let mut per_schedule = vec![0usize; SCHEDULES];
    for r in &occurred {
        per_schedule[r.schedule] += 1;
    }
    let busy = (0..SCHEDULES).max_by_key(|&i| per_schedule[i]).unwrap();
    let mut newest_seen = vec![false; SCHEDULES];
    let (mut waiting, mut running) = (Vec::new(), Vec::new());
    let outputs: Vec<String> = (0..2_000)
        .map(|_| {
            let chars = between(&mut rng, 200, 700) as usize;
            format!("Done. {}", lang.sentence(&mut rng, chars))
        })
        .collect();
    eprintln!(
        "writing {RUNS} runs ({occurrences_in_week} occurrences in the week), {:.0?}…",
        seeding.elapsed()
    );
    let conn = app.db().conn().await.unwrap();
    let mut succeeded_of_busy = Vec::new();
    let mut finished = Vec::new();
    let mut rows = Vec::with_capacity(RUNS);
    for r in &occurred {
        let schedule = &schedules[r.schedule];
        let fast = per_schedule[r.schedule] >= 100;
        let newest = !std::mem::replace(&mut newest_seen[r.schedule], true);
        let started = r.scheduled_for + between(&mut rng, 20, 3_000);
        let took = between(&mut rng, 1_500, 90_000);
        let run_id = run_id_at(started);
        let roll = rng.unit();
        let status = if newest && fast && waiting.len() < PENDING_APPROVALS {
            waiting.push((run_id.clone(), r.schedule));
            "waiting"
        } else if newest && fast && running.len() < RUNNING {
            running.push(run_id.clone());
            "running"
        } else if roll < 0.86 {
            "succeeded"
        } else if roll < 0.92 {
            "failed"
        } else if roll < 0.96 {
            "skipped"
        } else if roll < 0.98 {
            "cancelled"
        } else if roll < 0.99 {
            "timed_out"
        } else {
            "interrupted"
        };
        let turns = between(&mut rng, 1, 7);
        let prompt = between(&mut rng, 600, 9_000);
        let completion = between(&mut rng, 80, 1_200);
        let cost = (prompt as f64 * 0.15 + completion as f64 * 0.6) / 1_000_000.0;
        let output_index = (rng.next() % outputs.len() as u64) as usize;
        let output = outputs[output_index].clone();
        let summary: String = output.chars().take(500).collect();
        let (attempt, worker, lease, started_at, finished_at) = match status {
            "running" => (1, Some("worker-a"), Some(seed_now + 60_000), started, None),
            "waiting" => (1, None, None, started, None),
            "skipped" => (1, Some("worker-b"), None, started, Some(started)),
            "failed" => (3, Some("worker-a"), None, started, Some(started + took)),
            _ => (
                1 + (rng.unit() < 0.04) as i64,
                Some(if rng.unit() < 0.5 {
                    "worker-a"
                } else {
                    "worker-b"
                }),
                None,
                started,
                Some(started + took),
            ),
        };
        let (output, summary, error, cancel) = match status {
            "succeeded" => (Some(output), Some(summary), None, None),
            "failed" | "interrupted" => (
                None,
                None,
                Some(format!(
                    "{}: {}",
                    pick(&mut rng, &ERRORS),
                    lang.sentence(&mut rng, 60)
                )),
                None,
            ),
            "timed_out" => (None, None, Some("timed out after 300 s".to_string()), None),
            "skipped" => (
                None,
                None,
                Some("skipped: the previous run was still going (overlap = skip)".to_string()),
                None,
            ),
            "cancelled" => (
                None,
                None,
                Some("cancelled by the operator".to_string()),
                Some("dashboard"),
            ),
            _ => (None, None, None, None),
        };
        let (turns, prompt, completion, cost) = if status == "skipped" {
            (0, 0, 0, 0.0)
        } else {
            (turns, prompt, completion, cost)
        };
        if status == "succeeded" {
            if r.schedule == busy {
                succeeded_of_busy.push(run_id.clone());
            }
            finished.push((
                run_id.clone(),
                r.schedule,
                output_index,
                finished_at.unwrap_or(started),
            ));
        }
        rows.push(json!([
            run_id,
            schedule.schedule_id,
            r.scheduled_for,
            attempt,
            status,
            worker,
            lease,
            started_at,
            finished_at,
            summary,
            output,
            error,
            turns,
            prompt,
            completion,
            cost,
            finished_at.is_some() as i64,
            r.scheduled_for,
            cancel,
        ]));
    }
    for batch in rows.chunks(5_000) {
        let tx = conn.write_tx().await.unwrap();
        tx.execute(
            "INSERT INTO schedule_runs (run_id, schedule_id, scheduled_for, attempt, status,
             worker_id, lease_expires_at, started_at, finished_at, output_summary, output,
             error, turn_count, prompt_tokens, completion_tokens, cost, notified, due_at,
             origin, cancel_requested_by)
             SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'),
                    json_extract(value, '$[2]'), json_extract(value, '$[3]'),
                    json_extract(value, '$[4]'), json_extract(value, '$[5]'),
                    json_extract(value, '$[6]'), json_extract(value, '$[7]'),
                    json_extract(value, '$[8]'), json_extract(value, '$[9]'),
                    json_extract(value, '$[10]'), json_extract(value, '$[11]'),
                    json_extract(value, '$[12]'), json_extract(value, '$[13]'),
                    json_extract(value, '$[14]'), json_extract(value, '$[15]'),
                    json_extract(value, '$[16]'), json_extract(value, '$[17]'), 'cadence',
                    json_extract(value, '$[18]')
             FROM json_each(?1)",
            [Value::Array(batch.to_vec()).to_string()],
        )
        .await
        .unwrap();
        tx.commit().await.unwrap();
    }
    drop(rows);
    // The schedules' record of their runs, as the worker keeps it; made a month ago.
    conn.execute(
        "UPDATE schedules SET created_at = ?1, updated_at = ?1,
         last_run_at = (SELECT max(finished_at) FROM schedule_runs r
                        WHERE r.schedule_id = schedules.schedule_id),
         last_run_status = (SELECT status FROM schedule_runs r
                            WHERE r.schedule_id = schedules.schedule_id
                            AND r.finished_at IS NOT NULL
                            ORDER BY scheduled_for DESC LIMIT 1),
         last_success_at = (SELECT max(finished_at) FROM schedule_runs r
                            WHERE r.schedule_id = schedules.schedule_id
                            AND r.status = 'succeeded')",
        [seed_now - 30 * DAY_MS],
    )
    .await
    .unwrap();
    conn.execute(
        "UPDATE schedules SET consecutive_failures = 1
         WHERE last_run_status IN ('failed', 'timed_out', 'interrupted')",
        (),
    )
    .await
    .unwrap();

    // Approvals: the waiting runs' calls, and answered ones of finished runs.
    eprintln!("approvals, progress, outbox, {:.0?}…", seeding.elapsed());
    let tx = conn.write_tx().await.unwrap();
    let mut pending_ids = Vec::new();
    for (run_id, schedule) in &waiting {
        let s = &schedules[*schedule];
        let approval_id = nightshift::ids::new_id("apr");
        tx.execute(
            "INSERT INTO approvals (approval_id, run_id, schedule_id, user_id, tool_name,
             arguments, resume_json, created_at, expires_at)
             VALUES (?1, ?2, ?3, ?4, 'mail__send', ?5, '{}', ?6, ?7)",
            libsql::params![
                approval_id.as_str(),
                run_id.as_str(),
                s.schedule_id.as_str(),
                s.user_id.as_str(),
                json!({"to": "team@example.com", "subject": "Weekly report",
                       "body": lang.sentence(&mut rng, 300)})
                .to_string(),
                seed_now - 600_000,
                seed_now + DAY_MS - 600_000
            ],
        )
        .await
        .unwrap();
        pending_ids.push(approval_id);
    }
    for (n, (run_id, schedule, _, _)) in finished
        .iter()
        .step_by(97)
        .take(ANSWERED_APPROVALS)
        .enumerate()
    {
        let s = &schedules[*schedule];
        let (state, by, reason) = match n % 5 {
            0 => ("denied", "dashboard", Some("not to the whole team")),
            1 => ("expired", "timeout", None),
            2 => ("approved", "link", None),
            _ => ("approved", "dashboard", None),
        };
        let at = seed_now - (n as i64 + 1) * 3_600_000;
        tx.execute(
            "INSERT INTO approvals (approval_id, run_id, schedule_id, user_id, tool_name,
             arguments, state, decided_by, reason, created_at, expires_at, decided_at,
             resumed_at) VALUES (?1, ?2, ?3, ?4, 'calendar__create_event', ?5, ?6, ?7, ?8,
             ?9, ?10, ?11, ?11)",
            libsql::params![
                nightshift::ids::new_id("apr"),
                run_id.as_str(),
                s.schedule_id.as_str(),
                s.user_id.as_str(),
                json!({"title": lang.sentence(&mut rng, 40), "at": "2026-12-01T09:00:00Z"})
                    .to_string(),
                state,
                by,
                reason,
                at - 300_000,
                at - 300_000 + DAY_MS,
                at
            ],
        )
        .await
        .unwrap();
    }
    tx.commit().await.unwrap();

    // Progress: a typical run (3 turns, 4 tool calls) and one at the default limits
    // (8 turns, 64 tool calls, long results).
    let typical_run = succeeded_of_busy[succeeded_of_busy.len() / 2].clone();
    let long_run = finished[finished.len() / 3].0.clone();
    let progress =
        |run_id: &str, turns: usize, calls: usize, result_chars: (i64, i64), rng: &mut Rng| {
            let mut events = vec![("status", json!({"status": "running", "attempt": 1}))];
            let per_turn = calls.div_ceil(turns.saturating_sub(1).max(1));
            let mut left = calls;
            for turn in 1..=turns {
                let now_calls = if turn == turns { 0 } else { per_turn.min(left) };
                left -= now_calls;
                let names: Vec<&str> = (0..now_calls)
                    .map(|c| ["memory_search", "web__fetch", "calendar__list_events"][c % 3])
                    .collect();
                let text = if now_calls == 0 {
                    lang.sentence(rng, 400)
                } else {
                    String::new()
                };
                events.push((
                    "turn",
                    json!({"turn": turn, "text": text, "tool_calls": names}),
                ));
                for name in names {
                    let query = lang.query(rng);
                    events.push((
                        "tool_call",
                        json!({"name": name, "arguments": json!({"query": query}).to_string()}),
                    ));
                    let chars = between(rng, result_chars.0, result_chars.1) as usize;
                    events.push((
                        "tool_result",
                        json!({"name": name, "result": lang.sentence(rng, chars)}),
                    ));
                }
            }
            events
                .into_iter()
                .enumerate()
                .map(|(i, (kind, body))| {
                    json!([
                        run_id,
                        i + 1,
                        kind,
                        body.to_string(),
                        seed_now - 3_600_000 + i as i64 * 800
                    ])
                })
                .collect::<Vec<Value>>()
        };
    let mut events = progress(&typical_run, 3, 4, (200, 600), &mut rng);
    let long_events = progress(&long_run, 8, 64, (300, 2_000), &mut rng);
    let long_event_count = long_events.len();
    events.extend(long_events);
    conn.execute(
        "INSERT INTO run_progress (run_id, seq, kind, body, at)
         SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'),
                json_extract(value, '$[2]'), json_extract(value, '$[3]'),
                json_extract(value, '$[4]')
         FROM json_each(?1)",
        [Value::Array(events).to_string()],
    )
    .await
    .unwrap();

    // The outbox: messages of runs spread over the week, most delivered, some dead, the
    // newest few pending.
    let plan = NotifyPlan {
        channel_id: "team-chat".into(),
        channel_context_id: None,
        marker: "[NOTIFY]".into(),
        failure_notice_after: 3,
        max_message_chars: 3500,
        public_url: None,
        ttl_ms: [86_400_000; 3],
        max_pending_per_channel: config.notify.max_pending_per_channel,
        digest_at: nightshift::time_of_day::DailyTime::MORNING_UTC,
    };
    let tx = conn.write_tx().await.unwrap();
    let stride = finished.len() / OUTBOX_MESSAGES;
    for (run_id, schedule, output, at) in finished.iter().step_by(stride).take(OUTBOX_MESSAGES) {
        let s = &schedules[*schedule];
        let output = &outputs[*output];
        let name = s.name.clone().unwrap_or_else(|| s.schedule_id.clone());
        let message = NewMessage {
            kind: "run",
            run_id: Some(run_id),
            schedule_id: Some(&s.schedule_id),
            user_id: &s.user_id,
            priority: Priority::Normal,
            payload: json!({"event": "run.finished",
                "summary": format!("{name}: {}", output.chars().take(200).collect::<String>()),
                "output": output}),
        };
        enqueue_in(&tx, &plan, message, *at).await.unwrap();
    }
    tx.commit().await.unwrap();
    conn.execute(
        "UPDATE outbox SET status = CASE WHEN created_at >= ?1 - 21600000 AND rowid % 3 = 0
                                         THEN 'pending'
                                         WHEN rowid % 12 = 0 THEN 'dead'
                                         ELSE 'delivered' END",
        [seed_now],
    )
    .await
    .unwrap();
    conn.execute(
        "UPDATE outbox SET attempts = CASE status WHEN 'dead' THEN 8 WHEN 'pending' THEN 2
                                                  ELSE 1 END,
         last_error = CASE WHEN status != 'delivered'
                      THEN 'webhook answered 503 Service Unavailable: upstream overloaded, try later'
                      END,
         delivered_at = CASE WHEN status = 'delivered' THEN created_at + 900 END,
         dead_at = CASE WHEN status = 'dead' THEN min(created_at + 21600000, ?1) END",
        [seed_now],
    )
    .await
    .unwrap();

    // Memory: a little for every user, a lot for a few.
    eprintln!("memory, {:.0?}…", seeding.elapsed());
    let memory = app.memory().clone();
    for u in 0..USERS + CHAT_ONLY_USERS {
        let user = format!("user-{u:03}");
        if u < USERS {
            for _ in 0..2 {
                let chars = between(&mut rng, 60, 300) as usize;
                memory
                    .save_note(&user, &NewNote::new(lang.sentence(&mut rng, chars)))
                    .await
                    .unwrap();
            }
        }
        let chat: Vec<NewEvent> = (0..6)
            .map(|i| {
                let role = if i % 2 == 0 {
                    Role::User
                } else {
                    Role::Assistant
                };
                let chars = between(&mut rng, 40, 400) as usize;
                NewEvent::new(role, lang.sentence(&mut rng, chars))
            })
            .collect();
        memory.append(&user, "chat", &chat).await.unwrap();
    }
    let planner = memory.as_agent(Some("planner")).unwrap();
    let mut versioned = Vec::new();
    for u in 0..HEAVY_USERS {
        let user = format!("user-{u:03}");
        let mut notes: Vec<SaveOutcome> = Vec::new();
        for n in 0..180 {
            let chars = between(&mut rng, 60, 320) as usize;
            let mut note = NewNote::new(lang.sentence(&mut rng, chars));
            note.tags = vec![pick(&mut rng, &["work", "home", "health", "travel"]).to_string()];
            let handle = if n % 6 == 5 { &planner } else { &memory };
            notes.push(handle.save_note(&user, &note).await.unwrap());
        }
        for saved in notes.iter().step_by(9).take(20) {
            for _ in 0..3 {
                let chars = between(&mut rng, 60, 320) as usize;
                // A planner's note is not the shared handle's to change: skipped.
                if memory
                    .update_note(&user, &saved.note_id, &lang.sentence(&mut rng, chars), None)
                    .await
                    .is_ok()
                    && u == 0
                {
                    versioned.push(saved.note_id.clone());
                }
            }
        }
        for (session, events) in [
            ("chat", 400),
            ("work", 40),
            ("trip", 30),
            ("health", 20),
            ("books", 20),
        ] {
            let all: Vec<NewEvent> = (0..events)
                .map(|i| {
                    let (role, chars) = if i % 2 == 0 {
                        (Role::User, between(&mut rng, 40, 200))
                    } else {
                        (Role::Assistant, between(&mut rng, 200, 900))
                    };
                    NewEvent::new(role, lang.sentence(&mut rng, chars as usize))
                })
                .collect();
            for batch in all.chunks(50) {
                memory.append(&user, session, batch).await.unwrap();
            }
        }
        for k in 0..12 {
            app.state()
                .set(
                    &StateAccess::user(&user, None),
                    &format!("user:pref-{k}"),
                    &json!({"value": lang.sentence(&mut rng, 40), "since": "2026-11-01"}),
                    None,
                )
                .await
                .unwrap();
        }
        for k in 0..5 {
            app.state()
                .set(
                    &StateAccess::user(&user, Some("chat".into())),
                    &format!("step-{k}"),
                    &json!(lang.sentence(&mut rng, 60)),
                    None,
                )
                .await
                .unwrap();
        }
        for k in 0..4 {
            let size = between(&mut rng, 2_000, 40_000) as usize;
            app.artifacts()
                .put(
                    &user,
                    "chat",
                    None,
                    &NewArtifact {
                        name: format!("report-{k}.md"),
                        mime_type: "text/markdown".into(),
                        content: lang.sentence(&mut rng, size).into_bytes(),
                    },
                )
                .await
                .unwrap();
        }
    }
    memory.embed_pending(&|_, _| {}).await.unwrap();
    let seed_secs = seeding.elapsed().as_secs_f64();
    eprintln!("seeded in {seed_secs:.0} s");

    // The server, and a logged-in operator.
    let admin = app
        .tokens()
        .create(&NewToken {
            user_id: None,
            name: Some("bench-admin".into()),
            expires_in_secs: None,
        })
        .await
        .unwrap()
        .secret;
    let stop = CancellationToken::new();
    let listening = nightshift::api::Listening::bind(
        &config.server,
        nightshift::api::router(&app, false, &stop),
    )
    .await
    .unwrap();
    let base = format!("http://{}", listening.local_addr().unwrap());
    let server = tokio::spawn({
        let stop = stop.clone();
        async move { listening.serve(stop, Duration::from_secs(5)).await }
    });
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let login = client
        .post(format!("{base}/ui/login"))
        .header(ORIGIN, &base)
        .form(&[("token", admin.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(login.status(), 303, "login");
    let cookie = login.headers()[SET_COOKIE]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_string();
    assert!(cookie.starts_with("nightshift_ui="), "{cookie}");

    // The pages.
    let busy_id = schedules[busy].schedule_id.clone();
    let heavy = "user-000";
    let note_id = versioned.first().cloned().expect("a note with versions");
    let link = app.approvals().link_key().await.unwrap().sign(
        &pending_ids[0],
        LinkAction::Approve,
        seed_now + DAY_MS - 600_000,
    );
    let query = lang.query(&mut rng).replace(' ', "+");
    let page = |label: &str, key: &'static str, path: String| Target {
        label: label.to_string(),
        key,
        path,
        content_type: HTML,
    };
    let targets = vec![
        page("login", "login", "/ui/login".into()),
        page("overview", "overview", "/ui".into()),
        page(
            "overview, 7-day chart",
            "overview_7d",
            "/ui?range=7d".into(),
        ),
        page(
            "overview, page 100",
            "overview_page100",
            "/ui?page=100".into(),
        ),
        page(
            &format!("schedule ({} runs)", per_schedule[busy]),
            "schedule",
            format!("/ui/schedules/{busy_id}"),
        ),
        page("runs", "runs", "/ui/runs".into()),
        page(
            "runs, failed",
            "runs_failed",
            "/ui/runs?status=failed".into(),
        ),
        page(
            "runs, one user",
            "runs_user",
            "/ui/runs?user=user-042".into(),
        ),
        page(
            "runs, one schedule",
            "runs_schedule",
            format!("/ui/runs?schedule={busy_id}"),
        ),
        page(
            "runs, page 1000",
            "runs_page1000",
            "/ui/runs?page=1000".into(),
        ),
        page("run (12 events)", "run", format!("/ui/runs/{typical_run}")),
        page(
            &format!("run ({long_event_count} events)"),
            "run_long",
            format!("/ui/runs/{long_run}"),
        ),
        page("outbox", "outbox", "/ui/outbox".into()),
        page(
            "outbox, dead",
            "outbox_dead",
            "/ui/outbox?status=dead".into(),
        ),
        page(
            "outbox, 7-day chart",
            "outbox_7d",
            "/ui/outbox?range=7d".into(),
        ),
        page("upcoming", "upcoming", "/ui/upcoming".into()),
        page("approvals", "approvals", "/ui/approvals".into()),
        page(
            "approval link",
            "approval_link",
            format!("/approval-link/{link}"),
        ),
        page("memory users", "memory", "/ui/memory".into()),
        page(
            "memory of a user",
            "memory_user",
            format!("/ui/memory/{heavy}"),
        ),
        page(
            "memory of a user, as an agent",
            "memory_user_agent",
            format!("/ui/memory/{heavy}?agent=planner"),
        ),
        page(
            "note (4 versions)",
            "note",
            format!("/ui/memory/{heavy}/notes/{note_id}"),
        ),
        page(
            "session (400 events)",
            "session",
            format!("/ui/memory/{heavy}/sessions/chat"),
        ),
        page("search form", "search_empty", "/ui/search".into()),
        page(
            "search",
            "search",
            format!("/ui/search?user={heavy}&q={query}"),
        ),
        page(
            "search with a conversation",
            "search_session",
            format!("/ui/search?user={heavy}&q={query}&session=chat"),
        ),
        page("settings", "settings", "/ui/settings".into()),
        Target {
            label: "stylesheet (every page's)".into(),
            key: "style",
            path: "/ui/style.css".into(),
            content_type: "text/css",
        },
    ];

    eprintln!("reading {} pages…", targets.len());
    let mut measured = Vec::new();
    for target in targets {
        let mut times = Vec::with_capacity(SAMPLES);
        let mut bytes = 0;
        for i in 0..WARM_UPS + SAMPLES {
            let start = Instant::now();
            let response = client
                .get(format!("{base}{}", target.path))
                .header(COOKIE, &cookie)
                .send()
                .await
                .unwrap();
            let status = response.status();
            let content_type = response
                .headers()
                .get(CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_string();
            let body = response.bytes().await.unwrap();
            let took = start.elapsed();
            assert_eq!(
                status,
                200,
                "{}: {}",
                target.path,
                String::from_utf8_lossy(&body)
            );
            assert!(
                content_type.starts_with(target.content_type),
                "{}: {content_type}",
                target.path
            );
            if i >= WARM_UPS {
                times.push(took);
                bytes = bytes.max(body.len());
            }
        }
        times.sort();
        measured.push(Measured {
            target,
            bytes,
            p50: percentile(&times, 0.5),
            p95: percentile(&times, 0.95),
        });
    }
    stop.cancel();
    server.await.unwrap();

    println!(
        "seed: {SCHEDULES} schedules of {USERS} users, {RUNS} runs over 7 days, \
         {OUTBOX_MESSAGES} outbox messages, memory for {} users ({seed_secs:.0} s)",
        USERS + CHAT_ONLY_USERS
    );
    println!("| page | bytes | p50 ms | p95 ms | ≤ 100 KB | ≤ 50 ms (p95) |");
    println!("|---|---|---|---|---|---|");
    let yes = |ok: bool| if ok { "yes" } else { "**no**" };
    for m in &measured {
        println!(
            "| {} `{}` | {} | {:.2} | {:.2} | {} | {} |",
            m.target.label,
            shown_path(&m.target.path),
            m.bytes,
            m.p50,
            m.p95,
            yes(m.bytes <= BUDGET_BYTES),
            yes(m.p95 <= BUDGET_MS),
        );
    }
    let pages: Vec<&Measured> = measured
        .iter()
        .filter(|m| m.target.content_type == HTML)
        .collect();
    let over_bytes = pages.iter().filter(|m| m.bytes > BUDGET_BYTES).count();
    let over_ms = pages.iter().filter(|m| m.p95 > BUDGET_MS).count();
    let max_bytes = pages.iter().map(|m| m.bytes).max().unwrap_or(0);
    let max_p95 = pages.iter().map(|m| m.p95).fold(0.0, f64::max);
    let mut pairs = vec![
        format!("dashboard_pages={}", pages.len()),
        format!("dashboard_pages_over_100kb={over_bytes}"),
        format!("dashboard_pages_over_50ms={over_ms}"),
        format!("dashboard_max_bytes={max_bytes}"),
        format!("dashboard_max_p95_ms={max_p95:.3}"),
    ];
    for m in &measured {
        pairs.push(format!("ui_{}_bytes={}", m.target.key, m.bytes));
        pairs.push(format!("ui_{}_p95_ms={:.3}", m.target.key, m.p95));
    }
    println!("{}", pairs.join(" "));
}

/// A path as the table shows it: ids cut short.
fn shown_path(path: &str) -> String {
    path.split('/')
        .map(|part| {
            if part.len() > 24 {
                format!("{}…", &part[..12])
            } else {
                part.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}
