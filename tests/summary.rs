//! Summary state: the epoch compare-and-swap refuses a stale writer.

mod common;

use common::fresh;
use nightshift::access::Actor;
use nightshift::memory::{MemoryError, NewEvent, Role, SessionKey, SummaryWrite};

#[tokio::test]
async fn stale_summary_write_is_refused() {
    let (_dir, memory) = fresh().await;
    let events: Vec<NewEvent> = (0..6)
        .map(|i| NewEvent::new(Role::User, format!("turn {i}")))
        .collect();
    memory.append("u", "s", &events).await.unwrap();

    let state = memory.read_summary(&Actor::Operator, "s").await.unwrap();
    assert_eq!(
        (state.epoch, state.upper_sequence, state.summary.clone()),
        (0, 0, None)
    );

    // Two summarizers read epoch 0; the first write wins.
    let first = memory
        .write_summary(&SessionKey::new("u", "s"), state.epoch, "turns 1-4", 4)
        .await
        .unwrap();
    assert_eq!(first, SummaryWrite::Applied { epoch: 1 });
    let stale = memory
        .write_summary(
            &SessionKey::new("u", "s"),
            state.epoch,
            "turns 1-3 (slow)",
            3,
        )
        .await
        .unwrap();
    assert_eq!(stale, SummaryWrite::Stale { current_epoch: 1 });

    let now = memory.read_summary(&Actor::Operator, "s").await.unwrap();
    assert_eq!(now.summary.as_deref(), Some("turns 1-4"));
    assert_eq!((now.epoch, now.upper_sequence), (1, 4));

    let next = memory
        .write_summary(&SessionKey::new("u", "s"), 1, "turns 1-6", 6)
        .await
        .unwrap();
    assert_eq!(next, SummaryWrite::Applied { epoch: 2 });
}

#[tokio::test]
async fn concurrent_writers_from_one_epoch_apply_exactly_once() {
    let (_dir, memory) = fresh().await;
    memory
        .append("u", "s", &[NewEvent::new(Role::User, "hello")])
        .await
        .unwrap();
    let mut tasks = Vec::new();
    for i in 0..8 {
        let memory = memory.clone();
        tasks.push(tokio::spawn(async move {
            memory
                .write_summary(&SessionKey::new("u", "s"), 0, &format!("writer {i}"), 1)
                .await
                .unwrap()
        }));
    }
    let mut applied = 0;
    for t in tasks {
        if matches!(t.await.unwrap(), SummaryWrite::Applied { .. }) {
            applied += 1;
        }
    }
    assert_eq!(applied, 1);
    assert_eq!(
        memory
            .read_summary(&Actor::Operator, "s")
            .await
            .unwrap()
            .epoch,
        1
    );
}

#[tokio::test]
async fn bad_summary_writes_change_nothing() {
    let (_dir, memory) = fresh().await;
    memory
        .append("u", "s", &[NewEvent::new(Role::User, "hello")])
        .await
        .unwrap();
    assert!(matches!(
        memory
            .write_summary(&SessionKey::new("u", "nope"), 0, "x", 0)
            .await,
        Err(MemoryError::SessionNotFound(_))
    ));
    assert!(matches!(
        memory
            .write_summary(&SessionKey::new("u", "s"), 0, "x", 99)
            .await,
        Err(MemoryError::Input(_))
    ));
    assert!(matches!(
        memory
            .write_summary(&SessionKey::new("u", "s"), 0, "", 1)
            .await,
        Err(MemoryError::Input(_))
    ));
    assert_eq!(
        memory
            .read_summary(&Actor::Operator, "s")
            .await
            .unwrap()
            .epoch,
        0
    );
}
