//! A rerun with memory as of the original (`schedule rerun --memory-as-of-original`): its
//! context and its memory tools see the notes and the schedule's conversation as they were
//! when the run it repeats started, and it changes no memory; a rerun without it sees
//! memory as it is. A real worker, the runtime the app builds from its configuration and a
//! scripted OpenAI-compatible model on 127.0.0.1.

mod common;

use common::model::{final_answer, last_tool_result, offered_tools, serve, tool_call};
use nightshift::access::Actor;
use nightshift::app::App;
use nightshift::config::{RuntimeConfig, RuntimeKind};
use nightshift::memory::{NewEvent, NewNote, Role};
use nightshift::schedule::store::RerunMemory;
use nightshift::schedule::types::{Run, RunStatus};
use nightshift::spec::ScheduleSpec;
use serde_json::{json, Value};
use tempfile::TempDir;

fn alice() -> Actor {
    Actor::User("alice".into())
}

/// The schedule's runs, newest first.
async fn runs(app: &App, id: &str) -> Vec<Run> {
    app.schedules().runs(&alice(), id, 10).await.unwrap()
}

/// Waits until the schedule has `n` runs, all ended.
async fn ended(app: &App, id: &str, n: usize) -> Vec<Run> {
    common::until(&format!("{n} runs ended"), async || {
        let runs = runs(app, id).await;
        runs.len() == n && runs.iter().all(|r| r.finished_at.is_some())
    })
    .await;
    runs(app, id).await
}

#[tokio::test]
async fn a_rerun_as_of_the_original_sees_memory_as_it_was_and_changes_none() {
    // Each run searches its memory; the rerun as of the original then tries to save.
    let search = json!({"query": "favourite colour"});
    let (url, seen) = serve("/v1/chat/completions", move |n, body| match n {
        1 | 3 | 6 => tool_call(&format!("call-{n}"), "memory_search", search.clone()),
        4 => tool_call(
            "call-4",
            "memory_save",
            json!({"content": "favourite colour is red"}),
        ),
        _ => final_answer(&format!("done: {}", last_tool_result(&body))),
    })
    .await;
    let dir = TempDir::new().unwrap();
    let mut config = common::config_in(&dir);
    config.runtime = RuntimeConfig {
        kind: RuntimeKind::Openai,
        base_url: format!("{url}/v1"),
        model: "scripted".into(),
        timeout_secs: 5,
        max_retries: 0,
        ..Default::default()
    };
    let app = common::app_with(&config, None).await;
    let memory = app.memory();
    let note = memory
        .save_note("alice", &NewNote::new("alice's favourite colour is blue"))
        .await
        .unwrap();
    let spec = ScheduleSpec {
        goal: "say what alice's favourite colour is".into(),
        triggered: true,
        ..Default::default()
    };
    let id = app
        .add_schedule(&Actor::Operator, "alice", &spec)
        .await
        .unwrap()
        .schedule_id;

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
    app.schedules()
        .trigger(&alice(), &id, Some("which colour?"), None)
        .await
        .unwrap();
    let original = ended(&app, &id, 1).await.remove(0);
    assert_eq!(
        original.status,
        RunStatus::Succeeded,
        "{:?}",
        original.error
    );

    // Since then: the note changed, and the schedule's conversation went on.
    memory
        .update_note(
            "alice",
            &note.note_id,
            "alice's favourite colour is green now",
            None,
        )
        .await
        .unwrap();
    memory
        .append_transcript(
            "alice",
            &format!("scheduled:{id}"),
            &[NewEvent::new(
                Role::User,
                "I moved to green, a greener green",
            )],
        )
        .await
        .unwrap();

    let session = format!("scheduled:{id}");
    let turns_before = memory
        .session(&session, Some("alice"))
        .await
        .unwrap()
        .last_sequence;
    let rerun = app
        .schedules()
        .rerun(&alice(), &original.run_id, RerunMemory::AsOfOriginal)
        .await
        .unwrap();
    let started = nightshift::db::clock::to_rfc3339(original.started_at.unwrap());
    assert_eq!(rerun.memory_as_of.as_deref(), Some(started.as_str()));
    // A rerun keeps its original's occurrence: told apart by id, not by order.
    let as_of = ended(&app, &id, 2)
        .await
        .into_iter()
        .find(|r| r.run_id != original.run_id)
        .unwrap();
    assert_eq!(
        as_of.parent_run_id.as_deref(),
        Some(original.run_id.as_str())
    );
    assert_eq!(as_of.memory_as_of, original.started_at);
    assert_eq!(as_of.status, RunStatus::Succeeded, "{:?}", as_of.error);

    let bodies: Vec<Value> = seen.lock().unwrap().clone();
    assert_eq!(bodies.len(), 5, "{bodies:?}");
    // Its prompt: the note as it was, none of what came after.
    let prompt = bodies[2]["messages"].to_string();
    assert!(prompt.contains("blue"), "{prompt}");
    assert!(!prompt.contains("green"), "{prompt}");
    // Its tools: a search of then, and nothing that writes or reads state of now.
    let offered = offered_tools(&bodies[2]);
    assert!(
        offered.contains(&"memory_search".to_string()),
        "{offered:?}"
    );
    for hidden in [
        "memory_save",
        "memory_update",
        "memory_delete",
        "state_get",
        "state_set",
        "schedule_follow_up",
        "schedule_pause",
    ] {
        assert!(!offered.contains(&hidden.to_string()), "{offered:?}");
    }
    let found = last_tool_result(&bodies[3]);
    assert!(found.contains("blue"), "{found}");
    assert!(!found.contains("green"), "{found}");
    let refused = last_tool_result(&bodies[4]);
    assert!(refused.contains("not available"), "{refused}");
    assert!(refused.contains(&started), "{refused}");
    let notes = memory.notes("alice").await.unwrap();
    assert_eq!(notes.len(), 1, "the rerun saved a note: {notes:?}");
    assert!(notes[0].content.contains("green"));
    let turns_after = memory
        .session(&session, Some("alice"))
        .await
        .unwrap()
        .last_sequence;
    assert_eq!(
        turns_after, turns_before,
        "the rerun added to the conversation"
    );

    // A rerun of the same run without it sees memory as it is now.
    app.schedules()
        .rerun(&alice(), &original.run_id, RerunMemory::Now)
        .await
        .unwrap();
    let now = ended(&app, &id, 3)
        .await
        .into_iter()
        .find(|r| r.run_id != original.run_id && r.run_id != as_of.run_id)
        .unwrap();
    assert_eq!(now.memory_as_of, None);
    let bodies: Vec<Value> = seen.lock().unwrap().clone();
    let prompt = bodies[5]["messages"].to_string();
    assert!(prompt.contains("green"), "{prompt}");
    assert!(last_tool_result(&bodies[6]).contains("green"));
    let offered_now = offered_tools(&bodies[5]);
    assert!(offered_now.contains(&"memory_save".to_string()));
    assert!(offered_now.contains(&"schedule_follow_up".to_string()));

    let _ = stop.send(());
    worker.await.unwrap().unwrap();
}
