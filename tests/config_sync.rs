//! `[[schedules]]` in the config file are synced at start; CLI schedules are never touched.

mod common;

use nightshift::access::Actor;
use nightshift::config::{Config, ScheduleSpec};
use nightshift::schedule::store::ScheduleFilter;
use nightshift::schedule::sync::{sync, SyncReport};
use nightshift::schedule::types::{NewSchedule, Source};
use nightshift::schedule::Cadence;

fn entry(name: &str, goal: &str, cron: &str) -> ScheduleSpec {
    let text = format!(
        "[[schedules]]\nname = \"{name}\"\nuser = \"alice\"\ngoal = \"{goal}\"\ncron = \"{cron}\"\ntz = \"Europe/Lisbon\"\nchannel = \"telegram:123:7\"\n"
    );
    toml::from_str::<Config>(&text).unwrap().schedules.remove(0)
}

#[tokio::test]
async fn config_schedules_are_added_changed_and_removed() {
    let dir = tempfile::TempDir::new().unwrap();
    let config = common::config_in(&dir);
    let app = common::app_with(&config, None).await;
    let store = app.schedules().clone();
    let mine = store
        .create(
            &Actor::Operator,
            &NewSchedule::new(
                "alice",
                "from the CLI",
                Cadence::cron("0 8 * * *", "UTC").unwrap(),
            ),
        )
        .await
        .unwrap();

    let first = vec![
        entry("digest", "send the digest", "0 7 * * 1-5"),
        entry("backup", "check backups", "0 3 * * *"),
    ];
    let report = sync(&store, &first, "UTC").await.unwrap();
    assert_eq!(
        report,
        SyncReport {
            added: 2,
            ..Default::default()
        }
    );
    let (all, total) = store
        .list(&Actor::Operator, &ScheduleFilter::default())
        .await
        .unwrap();
    assert_eq!(total, 3);
    let digest = all
        .iter()
        .find(|s| s.name.as_deref() == Some("digest"))
        .unwrap();
    assert_eq!(digest.source, Source::Config);
    assert_eq!(digest.channel_id.as_deref(), Some("telegram"));
    assert_eq!(digest.channel_context_id.as_deref(), Some("123:7"));

    // Unchanged file: nothing changes.
    let report = sync(&store, &first, "UTC").await.unwrap();
    assert_eq!(
        report,
        SyncReport {
            unchanged: 2,
            ..Default::default()
        }
    );

    let second = vec![
        entry("digest", "send the digest, briefly", "0 7 * * 1-5"),
        entry("water", "water the plants", "0 18 * * *"),
    ];
    let report = sync(&store, &second, "UTC").await.unwrap();
    assert_eq!(
        report,
        SyncReport {
            added: 1,
            changed: 1,
            removed: 1,
            ..Default::default()
        }
    );
    let (all, _) = store
        .list(&Actor::Operator, &ScheduleFilter::default())
        .await
        .unwrap();
    let names: Vec<_> = all.iter().filter_map(|s| s.name.clone()).collect();
    assert!(names.contains(&"water".to_string()) && !names.contains(&"backup".to_string()));
    assert_eq!(
        all.iter()
            .find(|s| s.name.as_deref() == Some("digest"))
            .unwrap()
            .goal,
        "send the digest, briefly"
    );
    // The CLI's schedule is untouched, and survives an empty file too.
    assert_eq!(
        store
            .get(&Actor::Operator, &mine.schedule_id)
            .await
            .unwrap(),
        mine
    );
    let report = sync(&store, &[], "UTC").await.unwrap();
    assert_eq!(report.removed, 2);
    assert_eq!(
        store
            .get(&Actor::Operator, &mine.schedule_id)
            .await
            .unwrap(),
        mine
    );
}

#[tokio::test]
async fn a_bad_entry_changes_nothing() {
    let dir = tempfile::TempDir::new().unwrap();
    let config = common::config_in(&dir);
    let app = common::app_with(&config, None).await;
    let store = app.schedules().clone();
    sync(&store, &[entry("ok", "fine", "0 7 * * *")], "UTC")
        .await
        .unwrap();
    let err = sync(
        &store,
        &[
            entry("ok", "changed", "0 7 * * *"),
            entry("bad", "broken", "0 25 * * *"),
        ],
        "UTC",
    )
    .await
    .unwrap_err();
    assert!(
        err.to_string().contains("bad") && err.to_string().contains("hour"),
        "{err}"
    );
    let (all, _) = store
        .list(&Actor::Operator, &ScheduleFilter::default())
        .await
        .unwrap();
    assert_eq!(all.len(), 1);
    assert_eq!(all[0].goal, "fine");
}

#[test]
fn config_file_rejects_ambiguous_schedules() {
    let both = "[[schedules]]\nname = \"x\"\nuser = \"u\"\ngoal = \"g\"\ncron = \"0 7 * * *\"\nevery = \"1h\"\n";
    assert!(Config::from_toml(both)
        .unwrap_err()
        .to_string()
        .contains("exactly one"));
    let twice = "[[schedules]]\nname = \"x\"\nuser = \"u\"\ngoal = \"g\"\nevery = \"1h\"\n[[schedules]]\nname = \"x\"\nuser = \"u\"\ngoal = \"g\"\nevery = \"2h\"\n";
    assert!(Config::from_toml(twice)
        .unwrap_err()
        .to_string()
        .contains("twice"));
    let unknown = "[[schedules]]\nname = \"x\"\nuser = \"u\"\ngoal = \"g\"\nevery = \"1h\"\ncolour = \"red\"\n";
    assert!(Config::from_toml(unknown)
        .unwrap_err()
        .to_string()
        .contains("colour"));
}

fn spec(text: &str) -> Vec<ScheduleSpec> {
    toml::from_str::<Config>(text).unwrap().schedules
}

/// Every entry is checked before anything changes: one too frequent (or unreadable) entry
/// names itself and not even the valid ones are created.
#[tokio::test]
async fn sync_is_all_or_nothing_and_names_the_entry() {
    let dir = tempfile::TempDir::new().unwrap();
    let config = common::config_in(&dir);
    let app = common::app_with(&config, None).await;
    let store = app.schedules().clone();
    let entries = spec(
        "[[schedules]]\nname = \"fine\"\nuser = \"u\"\ngoal = \"g\"\nevery = \"1h\"\n\
         [[schedules]]\nname = \"eager\"\nuser = \"u\"\ngoal = \"g\"\nevery = \"30s\"\n",
    );
    let err = sync(&store, &entries, "UTC").await.unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("schedules[1].every") && text.contains("eager"),
        "{text}"
    );
    assert_eq!(
        nightshift::error::Kind::kind(&err),
        nightshift::error::ErrorKind::Config
    );
    let (all, _) = store
        .list(&Actor::Operator, &ScheduleFilter::default())
        .await
        .unwrap();
    assert!(all.is_empty(), "nothing was created");
}

/// A config one-shot whose time has passed is reported and left out; the rest sync.
#[tokio::test]
async fn a_past_config_one_shot_is_reported_not_fatal() {
    let dir = tempfile::TempDir::new().unwrap();
    let config = common::config_in(&dir);
    let app = common::app_with(&config, None).await;
    let store = app.schedules().clone();
    let entries = spec(
        "[[schedules]]\nname = \"fine\"\nuser = \"u\"\ngoal = \"g\"\nevery = \"1h\"\n\
         [[schedules]]\nname = \"gone\"\nuser = \"u\"\ngoal = \"g\"\nat = \"2001-01-01T00:00:00Z\"\n",
    );
    let report = sync(&store, &entries, "UTC").await.unwrap();
    assert_eq!(report.added, 1);
    assert_eq!(report.expired, ["gone"]);
}

/// A one-shot phrase read in a zone follows that zone: changing `tz` changes the instant.
#[tokio::test]
async fn a_config_one_shot_follows_its_zone() {
    let dir = tempfile::TempDir::new().unwrap();
    let config = common::config_in(&dir);
    let app = common::app_with(&config, None).await;
    let store = app.schedules().clone();
    let entry = |tz: &str| {
        spec(&format!(
            "[[schedules]]\nname = \"friday\"\nuser = \"u\"\ngoal = \"g\"\nwhen = \"on friday at 5pm\"\ntz = \"{tz}\"\n"
        ))
    };
    sync(&store, &entry("Asia/Tokyo"), "UTC").await.unwrap();
    let (tokyo, _) = store
        .list(&Actor::Operator, &ScheduleFilter::default())
        .await
        .unwrap();
    let report = sync(&store, &entry("America/Los_Angeles"), "UTC")
        .await
        .unwrap();
    assert_eq!(report.changed, 1, "{report:?}");
    let (la, _) = store
        .list(&Actor::Operator, &ScheduleFilter::default())
        .await
        .unwrap();
    assert_ne!(tokyo[0].next_run_at, la[0].next_run_at);
    assert_eq!(la[0].cadence.zone().name(), "America/Los_Angeles");
}

/// A config entry may follow a schedule (by id) with no cadence of its own; a change of
/// `on` is made in place, and an upstream of another user is refused, naming the entry.
#[tokio::test]
async fn a_config_entry_follows_a_schedule_and_changes_in_place() {
    let dir = tempfile::TempDir::new().unwrap();
    let config = common::config_in(&dir);
    let app = common::app_with(&config, None).await;
    let store = app.schedules().clone();
    let upstream = store
        .create(
            &Actor::Operator,
            &NewSchedule::new("alice", "fetch", Cadence::cron("0 8 * * *", "UTC").unwrap()),
        )
        .await
        .unwrap();
    let follower = |on: &str, user: &str| {
        let text = format!(
            "[[schedules]]\nname = \"after-fetch\"\nuser = \"{user}\"\ngoal = \"summarize\"\nafter = \"{}\"\non = \"{on}\"\n",
            upstream.schedule_id
        );
        toml::from_str::<Config>(&text).unwrap().schedules
    };
    sync(&store, &follower("succeeded", "alice"), "UTC")
        .await
        .unwrap();
    let find = || async {
        let (all, _) = store
            .list(&Actor::Operator, &ScheduleFilter::default())
            .await
            .unwrap();
        all.into_iter()
            .find(|s| s.name.as_deref() == Some("after-fetch"))
            .unwrap()
    };
    let first = find().await;
    assert!(matches!(first.cadence, Cadence::Triggered { .. }));
    assert_eq!(
        first.after.as_ref().unwrap().schedule_id,
        upstream.schedule_id
    );
    let report = sync(&store, &follower("finished", "alice"), "UTC")
        .await
        .unwrap();
    assert_eq!(report.changed, 1, "{report:?}");
    let second = find().await;
    assert_eq!(second.schedule_id, first.schedule_id);
    assert_eq!(
        second.after.unwrap().on,
        nightshift::spec::ChainOn::Finished
    );
    let err = sync(&store, &follower("finished", "bob"), "UTC")
        .await
        .unwrap_err();
    assert!(err.to_string().contains("after"), "{err}");
    assert_eq!(find().await.user_id, "alice", "nothing changed");
}

/// A config entry's tool and approval patterns are stored with it, and a change to
/// either changes the schedule in place (it is not taken as the same schedule); a bad
/// pattern names its entry and `approve`, and changes nothing.
#[tokio::test]
async fn a_config_entrys_patterns_are_kept_and_a_change_to_them_is_a_change() {
    let dir = tempfile::TempDir::new().unwrap();
    let config = common::config_in(&dir);
    let app = common::app_with(&config, None).await;
    let store = app.schedules().clone();
    let entry = |tools: &str, approve: &str| {
        spec(&format!(
            "[[schedules]]\nname = \"tidy\"\nuser = \"alice\"\ngoal = \"tidy the files\"\n\
             every = \"1h\"\ntools = {tools}\napprove = {approve}\n"
        ))
    };
    let find = || async {
        let (all, _) = store
            .list(&Actor::Operator, &ScheduleFilter::default())
            .await
            .unwrap();
        assert_eq!(all.len(), 1);
        all.into_iter().next().unwrap()
    };
    let first = entry(
        r#"["files__*"]"#,
        r#"["files__write_*", "!files__write_draft"]"#,
    );
    assert_eq!(sync(&store, &first, "UTC").await.unwrap().added, 1);
    let made = find().await;
    assert_eq!(made.tools, ["files__*"]);
    assert_eq!(made.approve, ["files__write_*", "!files__write_draft"]);
    assert_eq!(sync(&store, &first, "UTC").await.unwrap().unchanged, 1);

    for (tools, approve) in [
        (r#"["files__*"]"#, r#"["files__*"]"#),
        (r#"["files__*", "web__*"]"#, r#"["files__*"]"#),
        (r#"["files__*", "web__*"]"#, "[]"),
    ] {
        let report = sync(&store, &entry(tools, approve), "UTC").await.unwrap();
        assert_eq!(report.changed, 1, "{tools} {approve}: {report:?}");
        let now = find().await;
        assert_eq!(now.schedule_id, made.schedule_id);
        assert_eq!(
            serde_json::to_string(&now.tools).unwrap(),
            tools.replace(", ", ",")
        );
        assert_eq!(
            serde_json::to_string(&now.approve).unwrap(),
            approve.replace(", ", ",")
        );
    }

    let before = find().await;
    let err = sync(&store, &entry("[]", r#"["files/*"]"#), "UTC")
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("schedules[0]") && err.contains("approve"),
        "{err}"
    );
    assert_eq!(find().await, before, "nothing changed");
}
