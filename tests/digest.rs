//! Daily digests: a `notify = "digest"` schedule's runs are told as one message a day at
//! its user's `digest_at`, on the user's clock, once, whichever worker folds it, and after
//! an outage as one message for all the days missed. Urgent notices still go at once. On
//! a manual clock with real claims and finishes, on the test's engine.

mod common;

use std::sync::Arc;

use common::runs::{claim_due, finish};
use nightshift::access::Actor;
use nightshift::app::App;
use nightshift::config::{ChannelConfig, ChannelKind, Config, UserConfig};
use nightshift::db::clock::{Clock, ManualClock};
use nightshift::notify::digest::DigestFolder;
use nightshift::notify::outbox::Message;
use nightshift::schedule::types::RunStatus;
use nightshift::spec::{NotifyPolicy, ScheduleSpec};
use tempfile::TempDir;

/// 2027-01-15 08:00 UTC, which is 08:00 in Lisbon too (UTC+0 in January).
const START: i64 = 1_800_000_000_000;
const MINUTE: i64 = 60_000;
const HOUR: i64 = 60 * MINUTE;

fn config(dir: &TempDir) -> Config {
    let mut config = common::config_in(dir);
    config.channels.insert(
        "hook".into(),
        ChannelConfig {
            url: Some("http://127.0.0.1:9/hook".into()),
            ..ChannelConfig::new(ChannelKind::Webhook)
        },
    );
    // Alice reads hers at 07:30 in New York (UTC-5 in January); bob keeps the default,
    // 08:00 UTC.
    config.users.insert(
        "alice".into(),
        UserConfig {
            timezone: Some("America/New_York".into()),
            digest_at: Some("07:30".into()),
            ..Default::default()
        },
    );
    config.validate().unwrap();
    config
}

async fn setup() -> (TempDir, Config, App, Arc<ManualClock>, DigestFolder) {
    let dir = TempDir::new().unwrap();
    let config = config(&dir);
    let clock = ManualClock::starting_at(START);
    let app = common::app_with(&config, Some(clock.clone() as Arc<dyn Clock>)).await;
    let folder = folder_of(&app);
    (dir, config, app, clock, folder)
}

fn folder_of(app: &App) -> DigestFolder {
    DigestFolder::new(app.memory().db().clone(), app.router().clone())
}

async fn add(app: &App, user: &str, name: &str, notify: NotifyPolicy) -> String {
    let spec = ScheduleSpec {
        name: Some(name.into()),
        goal: "look at the queue and say what is stuck".into(),
        every: Some("1h".into()),
        channel: Some("hook".into()),
        notify: Some(notify),
        ..Default::default()
    };
    app.add_schedule(&Actor::Operator, user, &spec)
        .await
        .unwrap()
        .schedule_id
}

/// Moves the clock to the schedule's next occurrence and records it as ended.
async fn run(app: &App, clock: &ManualClock, id: &str, status: RunStatus, output: &str) {
    let due = app
        .schedules()
        .get(&Actor::Operator, id)
        .await
        .unwrap()
        .next_run_at
        .unwrap();
    clock.advance_ms((due - clock.now_ms()).max(0));
    let claim = claim_due(app, id).await;
    finish(app, &claim, status, output).await;
}

/// The outbox's messages of `kind`, oldest first.
async fn messages(app: &App, kind: &str) -> Vec<Message> {
    let mut all = app.outbox().list(None, 1000).await.unwrap();
    all.retain(|m| m.kind == kind);
    all.reverse();
    all
}

/// 07:30 in New York on 2027-01-15 (12:30 UTC), the first after runs at 09:00 to 12:00
/// UTC (04:00 to 07:00 there).
const ALICE_DIGEST: i64 = START + 4 * HOUR + 30 * MINUTE;

#[tokio::test]
async fn a_digest_schedules_runs_are_one_message_at_the_users_time_once() {
    let (_dir, config, app, clock, folder) = setup().await;
    let digest = add(&app, "alice", "queue", NotifyPolicy::Digest).await;
    let always = add(&app, "alice", "weather", NotifyPolicy::Always).await;
    run(&app, &clock, &digest, RunStatus::Succeeded, "3 stuck\nmore").await;
    run(&app, &clock, &always, RunStatus::Succeeded, "sunny").await;
    run(&app, &clock, &digest, RunStatus::Failed, "").await;
    run(
        &app,
        &clock,
        &digest,
        RunStatus::Succeeded,
        "\n\nnothing stuck",
    )
    .await;
    let runs = messages(&app, "run").await;
    assert_eq!(
        runs.len(),
        1,
        "only the other schedule's run is told at once"
    );
    assert_eq!(runs[0].schedule_id.as_deref(), Some(always.as_str()));

    // Not before her 07:30, on her clock.
    clock.advance_ms(ALICE_DIGEST - 1 - clock.now_ms());
    assert_eq!(folder.fold(clock.now_ms()).await.unwrap(), 0);
    assert!(messages(&app, "digest").await.is_empty());
    clock.advance_ms(1);
    assert_eq!(folder.fold(clock.now_ms()).await.unwrap(), 1);
    let other_worker = common::app_with(&config, Some(clock.clone() as Arc<dyn Clock>)).await;
    assert_eq!(
        folder.fold(clock.now_ms()).await.unwrap(),
        0,
        "folded twice"
    );
    assert_eq!(
        folder_of(&other_worker).fold(clock.now_ms()).await.unwrap(),
        0
    );

    let digests = messages(&app, "digest").await;
    assert_eq!(digests.len(), 1);
    let message = &digests[0];
    assert_eq!(
        (message.user_id.as_str(), message.channel_id.as_str()),
        ("alice", "hook")
    );
    assert_eq!(message.schedule_id.as_deref(), Some(digest.as_str()));
    assert_eq!(message.priority, "normal");
    assert_eq!(message.payload["summary"], "queue: 3 runs, 1 not succeeded");
    let output = message.payload["output"].as_str().unwrap();
    let lines: Vec<&str> = output.lines().collect();
    assert_eq!(lines.len(), 3, "{output}");
    assert!(lines[0].ends_with("succeeded: 3 stuck"), "{output}");
    assert!(lines[1].ends_with("failed: it broke"), "{output}");
    assert!(lines[2].ends_with("succeeded: nothing stuck"), "{output}");
    assert!(
        lines[0].starts_with("2027-01-15T09:00:00"),
        "oldest first: {output}"
    );

    // A run after the fold waits for the next day's digest.
    run(&app, &clock, &digest, RunStatus::Succeeded, "1 stuck").await;
    assert_eq!(folder.fold(clock.now_ms()).await.unwrap(), 0);
    clock.advance_ms(ALICE_DIGEST + 24 * HOUR - clock.now_ms());
    assert_eq!(folder.fold(clock.now_ms()).await.unwrap(), 1);
    let digests = messages(&app, "digest").await;
    assert_eq!(digests.len(), 2);
    assert_eq!(digests[1].payload["summary"], "queue: 1 run");
}

#[tokio::test]
async fn each_user_gets_their_own_digest_at_their_own_time() {
    let (_dir, _config, app, clock, folder) = setup().await;
    let alices = add(&app, "alice", "queue", NotifyPolicy::Digest).await;
    let bobs = add(&app, "bob", "queue", NotifyPolicy::Digest).await;
    run(&app, &clock, &alices, RunStatus::Succeeded, "alice's queue").await;
    run(&app, &clock, &bobs, RunStatus::Succeeded, "bob's queue").await;

    // Alice's 07:30 in New York comes first (12:30 UTC); bob's default 08:00 UTC the
    // next morning.
    clock.advance_ms(ALICE_DIGEST - clock.now_ms());
    assert_eq!(folder.fold(clock.now_ms()).await.unwrap(), 1);
    let digests = messages(&app, "digest").await;
    assert_eq!(digests.len(), 1);
    assert_eq!(digests[0].user_id, "alice");
    assert!(
        !digests[0].payload.to_string().contains("bob"),
        "{}",
        digests[0].payload
    );
    assert!(digests[0].payload["output"]
        .as_str()
        .unwrap()
        .ends_with("alice's queue"));
    clock.advance_ms(START + 24 * HOUR - 1 - clock.now_ms());
    assert_eq!(folder.fold(clock.now_ms()).await.unwrap(), 0);
    clock.advance_ms(1);
    assert_eq!(folder.fold(clock.now_ms()).await.unwrap(), 1);
    let digests = messages(&app, "digest").await;
    assert_eq!(digests[1].user_id, "bob");
    assert!(digests[1].payload["output"]
        .as_str()
        .unwrap()
        .ends_with("bob's queue"));
}

/// Days with no worker folding: every day missed comes as one message, not one a day.
#[tokio::test]
async fn after_an_outage_the_days_missed_are_one_message() {
    let (_dir, _config, app, clock, folder) = setup().await;
    let id = add(&app, "alice", "queue", NotifyPolicy::Digest).await;
    for day in 0..3 {
        run(
            &app,
            &clock,
            &id,
            RunStatus::Succeeded,
            &format!("day {day}"),
        )
        .await;
        clock.advance_ms(24 * HOUR);
    }
    assert_eq!(folder.fold(clock.now_ms()).await.unwrap(), 1);
    let digests = messages(&app, "digest").await;
    assert_eq!(digests.len(), 1);
    assert_eq!(digests[0].payload["summary"], "queue: 3 runs");
    assert_eq!(digests[0].payload["runs_total"], 3);
}

/// A running worker folds what is due on its own, and sends it.
#[tokio::test]
async fn a_running_worker_folds_what_is_due() {
    let (_dir, _config, app, clock, _folder) = setup().await;
    let id = add(&app, "alice", "queue", NotifyPolicy::Digest).await;
    run(&app, &clock, &id, RunStatus::Succeeded, "fine").await;
    app.schedules()
        .pause(&Actor::Operator, &id, None)
        .await
        .unwrap();
    clock.advance_ms(ALICE_DIGEST - clock.now_ms());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let worker = tokio::spawn({
        let app = app.clone();
        async move {
            nightshift::worker::run(&app, async {
                let _ = stopped.await;
            })
            .await
        }
    });
    common::until("the digest is folded and tried", async || {
        messages(&app, "digest")
            .await
            .first()
            .is_some_and(|m| m.attempts > 0)
    })
    .await;
    let _ = stop.send(());
    worker.await.unwrap().unwrap();
    assert_eq!(messages(&app, "digest").await.len(), 1);
}

/// Two workers folding at the same moment write one message between them.
#[tokio::test]
async fn two_workers_folding_at_once_write_one_message() {
    let (_dir, config, app, clock, folder) = setup().await;
    let id = add(&app, "alice", "queue", NotifyPolicy::Digest).await;
    for _ in 0..3 {
        run(&app, &clock, &id, RunStatus::Succeeded, "fine").await;
    }
    let other = common::app_with(&config, Some(clock.clone() as Arc<dyn Clock>)).await;
    let other = folder_of(&other);
    clock.advance_ms(ALICE_DIGEST - clock.now_ms());
    let now = clock.now_ms();
    let (one, two) = tokio::join!(folder.fold(now), other.fold(now));
    let (one, two) = (one.unwrap(), two.unwrap());
    let digests = messages(&app, "digest").await;
    assert_eq!(digests.len(), 1, "{one} + {two}: {digests:?}");
    assert_eq!(digests[0].payload["runs_total"], 3);
}

/// A digest holds back results, not alarms: the notice that a schedule keeps failing goes
/// at once.
#[tokio::test]
async fn a_digest_schedule_that_keeps_failing_is_told_at_once() {
    let (_dir, _config, app, clock, _folder) = setup().await;
    let id = add(&app, "alice", "queue", NotifyPolicy::Digest).await;
    for _ in 0..3 {
        run(&app, &clock, &id, RunStatus::Failed, "").await;
    }
    let failing = messages(&app, "failing").await;
    assert_eq!(failing.len(), 1);
    assert_eq!(failing[0].priority, "high");
    assert!(messages(&app, "run").await.is_empty());
}

/// A digest time that cannot be read is refused by the config check, naming it.
#[test]
fn bad_digest_times_name_the_key() {
    let dir = TempDir::new().unwrap();
    let mut config = config(&dir);
    config.notify.digest_at = "8am".into();
    let err = config.validate().unwrap_err().to_string();
    assert!(err.contains("notify.digest_at"), "{err}");
    assert!(err.contains("not a time of day"), "{err}");

    let mut config = self::config(&dir);
    config.users.get_mut("alice").unwrap().digest_at = Some("24:00".into());
    let err = config.validate().unwrap_err().to_string();
    assert!(err.contains("users.alice.digest_at"), "{err}");
    assert!(err.contains("00:00 to 23:59"), "{err}");
}

/// Erasing a user takes their digest lines too: nothing of theirs goes out after.
#[tokio::test]
async fn a_purged_users_digest_lines_go_with_them() {
    let (_dir, _config, app, clock, folder) = setup().await;
    let alices = add(&app, "alice", "queue", NotifyPolicy::Digest).await;
    let bobs = add(&app, "bob", "queue", NotifyPolicy::Digest).await;
    run(&app, &clock, &alices, RunStatus::Succeeded, "alice's queue").await;
    run(&app, &clock, &bobs, RunStatus::Succeeded, "bob's queue").await;
    let dry = nightshift::app::purge::purge_user(app.db(), &Actor::Operator, "alice", true)
        .await
        .unwrap();
    assert_eq!(dry.removed["digest_lines"], 1);
    nightshift::app::purge::purge_user(app.db(), &Actor::Operator, "alice", false)
        .await
        .unwrap();
    clock.advance_ms(START + 24 * HOUR - clock.now_ms());
    assert_eq!(folder.fold(clock.now_ms()).await.unwrap(), 1);
    let digests = messages(&app, "digest").await;
    assert_eq!(digests.len(), 1);
    assert_eq!(digests[0].user_id, "bob");
}
