//! The schedule tools a run's model is offered (`schedule_follow_up`, `schedule_list`,
//! `schedule_pause`), through the runtime the app builds from its configuration and a
//! scripted OpenAI-compatible model: a follow-up made for the run's user only, notifying
//! where its schedule does, recorded with its run, held to the minimum interval and the
//! per-user cap, paused for confirmation or not offered at all as the operator says.

mod common;

use common::model::{final_answer, last_tool_result, offered_tools, serve, tool_call};
use nightshift::access::Actor;
use nightshift::app::App;
use nightshift::config::{AgentSchedules, Config, RuntimeConfig, RuntimeKind};
use nightshift::runtime::GoalRequest;
use nightshift::schedule::types::{NewSchedule, Schedule, ScheduleStatus};
use nightshift::schedule::Cadence;
use serde_json::{json, Value};
use tempfile::TempDir;

type Seen = std::sync::Arc<std::sync::Mutex<Vec<Value>>>;

/// A model that makes each call of `calls` in turn, one a turn, then answers.
async fn model(calls: Vec<(&'static str, Value)>) -> (String, Seen) {
    serve("/v1/chat/completions", move |n, body| {
        match calls.get(n - 1) {
            Some((name, args)) => tool_call(&format!("call-{n}"), name, args.clone()),
            None => final_answer(&format!("done: {}", last_tool_result(&body))),
        }
    })
    .await
}

async fn app_for(dir: &TempDir, url: &str, tweak: impl FnOnce(&mut Config)) -> App {
    let mut config = common::config_in(dir);
    config.runtime = RuntimeConfig {
        kind: RuntimeKind::Openai,
        base_url: format!("{url}/v1"),
        model: "scripted".into(),
        timeout_secs: 5,
        max_retries: 0,
        ..Default::default()
    };
    tweak(&mut config);
    common::app_with(&config, None).await
}

/// A daily schedule of `user`'s with a channel: the run's own schedule.
async fn parent(app: &App, user: &str) -> Schedule {
    let mut new = NewSchedule::new(
        user,
        "summarise the inbox",
        Cadence::Cron {
            expr: "0 9 * * *".into(),
            tz: "Europe/Lisbon".into(),
        },
    );
    new.channel_id = Some("log".into());
    new.agent_id = Some("planner".into());
    new.tools = vec!["files__*".into()];
    new.approve = vec!["files__write_*".into(), "memory_delete".into()];
    app.schedules()
        .create(&Actor::Operator, &new)
        .await
        .unwrap()
}

fn request(schedule: &Schedule, run_id: &str) -> GoalRequest {
    GoalRequest {
        run_id: run_id.into(),
        schedule_id: schedule.schedule_id.clone(),
        user_id: schedule.user_id.clone(),
        goal: schedule.goal.clone(),
        session_id: format!("scheduled:{}", schedule.schedule_id),
        context: String::new(),
        input: None,
        agent_id: None,
        tools: Vec::new(),
        approve: Vec::new(),
        resume: None,
        max_turns: 8,
        max_cost: None,
        progress: Default::default(),
        memory_as_of: None,
    }
}

/// The tool results the model was given, in order.
fn results(seen: &Seen) -> Vec<Value> {
    let bodies = seen.lock().unwrap();
    bodies
        .iter()
        .skip(1)
        .map(|b| serde_json::from_str(&last_tool_result(b)).unwrap_or(Value::Null))
        .collect()
}

async fn user_schedules(app: &App, user: &str) -> Vec<Schedule> {
    let actor = Actor::User(user.into());
    app.schedules()
        .list(&actor, &Default::default())
        .await
        .unwrap()
        .0
}

#[tokio::test]
async fn a_follow_up_is_the_runs_users_one_shot_recorded_with_its_run() {
    let dir = TempDir::new().unwrap();
    let (url, seen) = model(vec![
        (
            "schedule_follow_up",
            json!({"goal": "check the reply", "after": "2h", "name": "reply check"}),
        ),
        (
            "schedule_follow_up",
            json!({"goal": "too soon", "after": "5s"}),
        ),
        ("schedule_follow_up", json!({"goal": "no time"})),
        (
            "schedule_follow_up",
            json!({"goal": "both", "at": "2030-01-01T09:00:00Z", "after": "1h"}),
        ),
        (
            "schedule_follow_up",
            json!({"goal": "far", "after": "5000d"}),
        ),
        ("schedule_follow_up", json!({"goal": "", "after": "2h"})),
        ("schedule_list", json!({})),
    ])
    .await;
    let app = app_for(&dir, &url, |_| {}).await;
    let mine = parent(&app, "alice").await;
    let bobs = parent(&app, "bob").await;
    let before = app.clock().now_ms();
    let outcome = app
        .runtime()
        .unwrap()
        .run_goal(&request(&mine, "run-alice-1"), app.memory())
        .await;
    assert_eq!(outcome.error, None, "{outcome:?}");
    let offered = offered_tools(&seen.lock().unwrap()[0]);
    for tool in ["schedule_follow_up", "schedule_list", "schedule_pause"] {
        assert!(offered.contains(&tool.to_string()), "{offered:?}");
    }
    let answers = results(&seen);
    let made_id = answers[0]["schedule_id"]
        .as_str()
        .expect("made")
        .to_string();
    for (i, expected) in [
        (1, "at least 60s ahead"),
        (2, "give `at` or `after`"),
        (3, "give `at` or `after`"),
        (4, "longer than the maximum"),
        (5, "goal"),
    ] {
        let error = answers[i]["error"].as_str().unwrap_or_default();
        assert!(error.contains(expected), "call {i}: {:?}", answers[i]);
    }
    let listed = answers[6]["schedules"].as_array().unwrap();
    assert_eq!(listed.len(), 2, "alice's own two: {listed:?}");
    assert!(listed
        .iter()
        .all(|s| s["schedule_id"] != bobs.schedule_id.as_str()));

    let made = app
        .schedules()
        .get(&Actor::User("alice".into()), &made_id)
        .await
        .unwrap();
    assert_eq!(made.made_by_run.as_deref(), Some("run-alice-1"));
    assert_eq!(made.status, ScheduleStatus::Active);
    assert_eq!(made.name.as_deref(), Some("reply check"));
    assert_eq!(
        made.channel_id, mine.channel_id,
        "it notifies where its run's schedule does"
    );
    assert_eq!(made.agent_id.as_deref(), Some("planner"));
    // Its runs get no more tools, and need the same approvals, as its run's schedule's:
    // a follow-up is no way around either.
    assert_eq!(made.tools, mine.tools);
    assert_eq!(made.approve, mine.approve);
    let Cadence::Once { at, tz } = &made.cadence else {
        panic!("not a one-shot: {:?}", made.cadence)
    };
    assert_eq!(tz, "Europe/Lisbon");
    assert!((before + 7_200_000..=app.clock().now_ms() + 7_200_000).contains(at));
    // Bob has only his own schedule.
    assert_eq!(user_schedules(&app, "bob").await.len(), 1);
}

#[tokio::test]
async fn pausing_reaches_only_the_runs_users_schedules() {
    let dir = TempDir::new().unwrap();
    // The schedules are made after the model starts: it reads their ids when asked.
    let ids = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let known = ids.clone();
    let (url, seen) = serve("/v1/chat/completions", move |n, body| {
        let ids = known.lock().unwrap().clone();
        match n {
            1 => tool_call(
                "c1",
                "schedule_pause",
                json!({"schedule_id": ids[0], "note": "mine now"}),
            ),
            2 => tool_call("c2", "schedule_pause", json!({"schedule_id": "sch-nope"})),
            3 => tool_call("c3", "schedule_pause", json!({"schedule_id": ids[1]})),
            _ => final_answer(&last_tool_result(&body)),
        }
    })
    .await;
    let app = app_for(&dir, &url, |_| {}).await;
    let bobs = parent(&app, "bob").await;
    let mine = parent(&app, "alice").await;
    ids.lock()
        .unwrap()
        .extend([bobs.schedule_id.clone(), mine.schedule_id.clone()]);
    let outcome = app
        .runtime()
        .unwrap()
        .run_goal(&request(&mine, "run-2"), app.memory())
        .await;
    assert_eq!(outcome.error, None);
    let answers = results(&seen);
    assert_eq!(
        answers[0]["error"]
            .as_str()
            .unwrap()
            .replace(bobs.schedule_id.as_str(), "ID"),
        answers[1]["error"]
            .as_str()
            .unwrap()
            .replace("sch-nope", "ID"),
        "another user's schedule answers like one that does not exist"
    );
    let bob_now = app
        .schedules()
        .get(&Actor::Operator, &bobs.schedule_id)
        .await
        .unwrap();
    assert_eq!(bob_now.status, ScheduleStatus::Active);
    assert_eq!(answers[2]["status"], "paused", "{:?}", answers[2]);
}

#[tokio::test]
async fn the_operators_policy_and_cap_hold() {
    // confirm: made paused, with the reason; the cap refuses the next one.
    let dir = TempDir::new().unwrap();
    let (url, seen) = model(vec![
        ("schedule_follow_up", json!({"goal": "one", "after": "1h"})),
        ("schedule_follow_up", json!({"goal": "two", "after": "1h"})),
    ])
    .await;
    let app = app_for(&dir, &url, |c| {
        c.scheduler.agent_schedules = AgentSchedules::Confirm;
        c.scheduler.max_agent_schedules_per_user = 1;
    })
    .await;
    let mine = parent(&app, "alice").await;
    app.runtime()
        .unwrap()
        .run_goal(&request(&mine, "run-1"), app.memory())
        .await;
    let answers = results(&seen);
    assert_eq!(answers[0]["status"], "paused", "{:?}", answers[0]);
    let error = answers[1]["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("max_agent_schedules_per_user is 1"),
        "{error}"
    );
    let made = app
        .schedules()
        .get(
            &Actor::Operator,
            answers[0]["schedule_id"].as_str().unwrap(),
        )
        .await
        .unwrap();
    assert!(made
        .status_reason
        .unwrap()
        .contains("waits for the user to confirm"));
    // The user confirms it by resuming it, through any door.
    let resumed = app
        .schedules()
        .resume(&Actor::User("alice".into()), &made.schedule_id)
        .await
        .unwrap();
    assert_eq!(resumed.status, ScheduleStatus::Active);

    // off: no schedule tools offered; a call by name is an unknown tool.
    let dir = TempDir::new().unwrap();
    let (url, seen) = model(vec![(
        "schedule_follow_up",
        json!({"goal": "x", "after": "1h"}),
    )])
    .await;
    let app = app_for(&dir, &url, |c| {
        c.scheduler.agent_schedules = AgentSchedules::Off
    })
    .await;
    let mine = parent(&app, "alice").await;
    app.runtime()
        .unwrap()
        .run_goal(&request(&mine, "run-1"), app.memory())
        .await;
    assert!(!offered_tools(&seen.lock().unwrap()[0])
        .iter()
        .any(|t| t.starts_with("schedule_")));
    assert!(results(&seen)[0]["error"]
        .as_str()
        .unwrap()
        .contains("unknown tool"));
    assert_eq!(user_schedules(&app, "alice").await.len(), 1);
}
