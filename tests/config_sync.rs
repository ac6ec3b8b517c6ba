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
