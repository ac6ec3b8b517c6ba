//! A user's turn of several topics is found by a question about one side remark in it:
//! each of its sentences is embedded on its own beside the whole chunk, and the vector leg
//! scores the chunk by the best of them. On the real model (`scripts/fetch-model.sh`).

mod common;

use common::{config_in, count};
use nightshift::app::open_memory;
use nightshift::embed::{Embedder, SemanticEmbedder};
use nightshift::memory::{Memory, NewEvent, Role, SessionKey};
use tempfile::TempDir;

/// A turn the way users write to an assistant: a request, details of it, and a remark
/// about themselves on another topic in the middle.
const TURN: &str = "Great, one more thing. Should I pay off the credit card faster or put \
    more into savings?\n\nThere's still $1,800 left on the credit card. We spend too much on \
    takeaways, honestly. Also, my default soundtrack is jazz piano trios, nothing else \
    really sticks. Take-home pay is around $5,200 a month. Subscriptions are creeping up \
    again.";
const REMARK: &str = "Also, my default soundtrack is jazz piano trios, nothing else really sticks.";
const QUESTION: &str = "What kind of music do I listen to?";

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// The vector leg's score of the one chunk of `session`.
async fn score(memory: &Memory, session: &str) -> f32 {
    let leg = memory
        .vector_leg(&SessionKey::new("u", session), QUESTION, 5)
        .await
        .unwrap();
    assert_eq!(leg.len(), 1, "{session}: one chunk");
    leg[0].1
}

#[tokio::test]
async fn a_users_side_remark_is_matched_by_its_own_sentence() {
    let dir = TempDir::new().unwrap();
    let mut config = config_in(&dir);
    config.embedding = common::semantic_config();
    let embedder = SemanticEmbedder::load(&config.embedding).unwrap();
    let memory = open_memory(&config).await.unwrap();
    // The same words said by the user and, in another conversation, by the assistant.
    for (session, role) in [("said", Role::User), ("echoed", Role::Assistant)] {
        memory
            .append("u", session, &[NewEvent::new(role, TURN)])
            .await
            .unwrap();
    }
    memory.embed_pending(&|_, _| {}).await.unwrap();
    // One vector row a chunk: the user's holds the chunk's vector and each of its six
    // sentences' (384 floats each), the assistant's the chunk's alone.
    assert_eq!(
        count(&memory, "SELECT count(*) FROM chunk_vectors").await,
        2
    );
    for (session, vectors) in [("said", 7), ("echoed", 1)] {
        let bytes = count(
            &memory,
            &format!(
                "SELECT length(v.embedding) FROM chunk_vectors v JOIN chunks c USING (chunk_id)
                 WHERE c.session_id = 'u\u{1f}{session}'"
            ),
        )
        .await;
        assert_eq!(bytes, vectors * 384 * 4, "{session}");
    }

    let v = embedder.embed(&[QUESTION, TURN, REMARK]).unwrap();
    let (whole, remark) = (cosine(&v[0], &v[1]), cosine(&v[0], &v[2]));
    assert!(
        remark > whole + 0.1,
        "the remark alone ({remark}) should match far better than the turn ({whole})"
    );
    let said = score(&memory, "said").await;
    let echoed = score(&memory, "echoed").await;
    // The user's turn scores as its best sentence; the assistant's is not split.
    assert!(
        (said - remark).abs() < 0.02,
        "user's {said}, remark {remark}"
    );
    assert!(
        (echoed - whole).abs() < 0.02,
        "assistant's {echoed}, turn {whole}"
    );

    // A rebuild embeds the same way as the queue (the model's batches differ: int8
    // activations are quantised per call, hence the tolerance).
    memory.rebuild_index(&|_, _| {}).await.unwrap();
    assert!((score(&memory, "said").await - said).abs() < 1e-3);
    assert!((score(&memory, "echoed").await - echoed).abs() < 1e-3);

    // And a new process loads the stored rows the same way.
    drop(memory);
    let reopened = open_memory(&config).await.unwrap();
    assert!((score(&reopened, "said").await - said).abs() < 1e-3);
    // Another user asking the same learns nothing of either.
    assert!(reopened
        .vector_leg(&SessionKey::new("v", "said"), QUESTION, 5)
        .await
        .unwrap()
        .is_empty());

    // `memory.sentence_vectors = 0`, rebuilt: whole chunks only, the user's too.
    drop(reopened);
    config.memory.sentence_vectors = 0;
    let whole_only = open_memory(&config).await.unwrap();
    whole_only.rebuild_index(&|_, _| {}).await.unwrap();
    let said = score(&whole_only, "said").await;
    assert!((said - whole).abs() < 0.02, "user's {said}, turn {whole}");
}
