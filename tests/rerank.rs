//! Search's second stage (`search.rerank`): it reorders the fused candidates, a missing or
//! failing stage leaves them in fused order and says so, and the late-interaction scorer
//! on the real model (fetched by `scripts/fetch-model.sh`, as tests/semantic.rs requires)
//! puts the turn that answers above the one that only shares the topic.

mod common;

use std::sync::Arc;

use common::config_in;
use nightshift::app::open_memory;
use nightshift::config::{EmbeddingConfig, RerankMode};
use nightshift::embed::{EmbedError, LateInteraction, FAST_READER_FILE};
use nightshift::memory::{
    CandidateScorer, Memory, NewEvent, RerankStage, Role, SearchRequest, SearchResults,
};
use tempfile::TempDir;

const TURNS: [&str; 5] = [
    "Ana: I adopted a grey cat called Pixel last week",
    "Ben: Lovely! I started learning the violin",
    "Ana: My sister lives in Oslo",
    "Ben: The violin recital is next Friday",
    "Ana: Pixel knocked over my coffee again",
];

/// A store with the turns above in session `s1` of user `u1`, searching with `rerank`.
async fn store(dir: &TempDir, rerank: RerankMode, embedding: EmbeddingConfig) -> Memory {
    let mut config = config_in(dir);
    config.search.rerank = rerank;
    config.embedding = embedding;
    let memory = open_memory(&config)
        .await
        .expect("a stage never stops the store");
    let events: Vec<NewEvent> = TURNS
        .iter()
        .map(|t| NewEvent::new(Role::User, *t))
        .collect();
    memory.append("u1", "s1", &events).await.unwrap();
    memory.embed_pending(&|_, _| {}).await.unwrap();
    memory
}

fn request(query: &str) -> SearchRequest {
    SearchRequest {
        user_id: "u1".into(),
        query: query.into(),
        top_k: Some(5),
        session_id: Some("s1".into()),
        ..Default::default()
    }
}

async fn search(memory: &Memory, query: &str) -> SearchResults {
    memory.search_detailed(&request(query)).await.unwrap()
}

fn texts(results: &SearchResults) -> Vec<&str> {
    results.hits.iter().map(|h| h.text.as_str()).collect()
}

/// Scores candidates by whether they hold a word: a stand-in for a model.
struct Prefers(&'static str);

impl CandidateScorer for Prefers {
    fn score(&self, _query: &str, candidates: &[&str]) -> Result<Vec<f32>, EmbedError> {
        Ok(candidates
            .iter()
            .map(|c| f32::from(u8::from(c.contains(self.0))))
            .collect())
    }
}

struct Fails;

impl CandidateScorer for Fails {
    fn score(&self, _query: &str, _candidates: &[&str]) -> Result<Vec<f32>, EmbedError> {
        Err(EmbedError::Failed("out of memory".into()))
    }
}

struct Panics;

impl CandidateScorer for Panics {
    fn score(&self, _query: &str, _candidates: &[&str]) -> Result<Vec<f32>, EmbedError> {
        panic!("a bug in the scorer")
    }
}

#[tokio::test]
async fn the_stage_reorders_the_fused_candidates() {
    let dir = TempDir::new().unwrap();
    let fused = store(&dir, RerankMode::None, EmbeddingConfig::default()).await;
    let before = search(&fused, "violin Pixel").await;
    let stage =
        RerankStage::loading(|| Ok(Arc::new(Prefers("recital")) as Arc<dyn CandidateScorer>));
    let mut config = config_in(&dir);
    config.search.rerank = RerankMode::LateInteraction;
    config.search.rerank_weight = 1.0;
    let reranked = fused
        .clone()
        .with_search_config(config.search.clone())
        .with_rerank_stage(Arc::new(stage));
    let after = search(&reranked, "violin Pixel").await;
    assert_eq!(after.degraded, None);
    assert_ne!(texts(&before)[0], TURNS[3], "{:?}", texts(&before));
    assert_eq!(texts(&after)[0], TURNS[3], "{:?}", texts(&after));
    // The same hits, only in another order.
    let mut a = texts(&before);
    let mut b = texts(&after);
    a.sort();
    b.sort();
    assert_eq!(a, b);
}

#[tokio::test]
async fn a_missing_or_failing_stage_answers_in_fused_order_and_says_so() {
    let dir = TempDir::new().unwrap();
    // No model where the configuration points: the store still opens and searches.
    let missing = EmbeddingConfig {
        model_dir: dir.path().join("no-model"),
        onnxruntime: dir.path().join("no-libonnxruntime.so"),
        ..EmbeddingConfig::default()
    };
    let memory = store(&dir, RerankMode::LateInteraction, missing).await;
    let mut fused_config = config_in(&dir).search;
    fused_config.rerank = RerankMode::None;
    let fused = search(&memory.clone().with_search_config(fused_config), "violin").await;
    assert_eq!(fused.degraded, None);
    assert!(!fused.hits.is_empty());

    let results = search(&memory, "violin").await;
    let reason = results
        .degraded
        .clone()
        .expect("says the stage was left out");
    assert!(reason.contains("reranker"), "{reason}");
    assert!(reason.contains("no-libonnxruntime.so"), "{reason}");
    assert_eq!(texts(&results), texts(&fused));

    for scorer in [
        Arc::new(Fails) as Arc<dyn CandidateScorer>,
        Arc::new(Panics) as Arc<dyn CandidateScorer>,
    ] {
        let stage = RerankStage::loading(move || Ok(scorer.clone()));
        let failing = memory.clone().with_rerank_stage(Arc::new(stage));
        let results = search(&failing, "violin").await;
        let reason = results.degraded.clone().expect("says the stage failed");
        assert!(reason.contains("reranker"), "{reason}");
        assert_eq!(texts(&results), texts(&fused));
    }
}

/// A question, the turn that answers it without repeating its words, and a turn that
/// repeats them without answering (the keyword leg's favourite).
const QUESTION: &str = "Which instrument is Ben learning?";
const ANSWER: &str = "Ben: I am learning the violin now";
const TOPICAL: &str = "Ana: Ben, you are always learning something, Ben loves learning";

#[test]
fn late_interaction_scores_the_answer_above_the_topic() {
    let scorer = LateInteraction::load(&common::semantic_config(), 8).unwrap();
    let candidates = [ANSWER, TOPICAL, "Ana: My sister lives in Oslo"];
    let scores = scorer.score(QUESTION, &candidates).unwrap();
    assert_eq!(scores.len(), 3);
    assert!(scores[0] > scores[1], "{scores:?}");
    assert!(scores[1] > scores[2], "{scores:?}");
    // Cached candidates score the same the second time.
    assert_eq!(scorer.score(QUESTION, &candidates).unwrap(), scores);
    // Nothing to read: every candidate scores 0, never an error.
    assert_eq!(scorer.score("the of and", &candidates).unwrap(), [0.0; 3]);
    assert_eq!(scorer.score(QUESTION, &[]).unwrap(), Vec::<f32>::new());
}

/// The reranker reads with the int8 network `scripts/fetch-model.sh` derives when the model
/// folder holds it, and with `model.onnx` when it does not: both rank the same way.
#[test]
fn the_reranker_reads_with_either_network_of_the_folder() {
    let semantic = common::semantic_config();
    let plain = TempDir::new().unwrap();
    for entry in std::fs::read_dir(&semantic.model_dir).unwrap() {
        let path = entry.unwrap().path();
        if path.file_name().unwrap() != FAST_READER_FILE {
            std::fs::copy(&path, plain.path().join(path.file_name().unwrap())).unwrap();
        }
    }
    let mut without = semantic.clone();
    without.model_dir = plain.path().to_path_buf();
    let candidates = [ANSWER, TOPICAL, "Ana: My sister lives in Oslo"];
    let mut all = Vec::new();
    for config in [&semantic, &without] {
        let scores = LateInteraction::load(config, 8)
            .unwrap()
            .score(QUESTION, &candidates)
            .unwrap();
        assert!(scores[0] > scores[1] && scores[1] > scores[2], "{scores:?}");
        all.push(scores);
    }
    assert!(
        semantic.model_dir.join(FAST_READER_FILE).is_file(),
        "{} is not in {}: scripts/fetch-model.sh derives it",
        FAST_READER_FILE,
        semantic.model_dir.display()
    );
    // Different networks, so not the same numbers: the folder's int8 one was read.
    assert_ne!(all[0], all[1]);
}

#[tokio::test]
async fn the_late_interaction_stage_lifts_the_answer_over_a_turn_near_the_topic() {
    let dir = TempDir::new().unwrap();
    let mut config = config_in(&dir);
    // Hash vectors: the fusion ranks by shared words and lends the topical turn's score to
    // the turn after it; the stage reads each turn with the model, and the answer, which
    // meets every word of the question, rises above that neighbour.
    config.embedding.model_dir = common::semantic_config().model_dir;
    config.embedding.onnxruntime = common::semantic_config().onnxruntime;
    config.search.rerank = RerankMode::LateInteraction;
    let memory = open_memory(&config).await.unwrap();
    let turns = [
        "Ana: Did you see the match last night?",
        TOPICAL,
        "Ben: Ha, maybe. The weather has been awful all week",
        "Ana: My sister lives in Oslo and it is colder there",
        ANSWER,
        "Ana: Pixel knocked over my coffee again",
        "Ben: Cats will be cats",
    ];
    let events: Vec<NewEvent> = turns
        .iter()
        .map(|t| NewEvent::new(Role::User, *t))
        .collect();
    memory.append("u1", "s1", &events).await.unwrap();
    memory.embed_pending(&|_, _| {}).await.unwrap();
    let mut fused_config = config.search.clone();
    fused_config.rerank = RerankMode::None;
    let fused = search(&memory.clone().with_search_config(fused_config), QUESTION).await;
    let reranked = search(&memory, QUESTION).await;
    assert_eq!(reranked.degraded, None);
    let rank = |results: &SearchResults| texts(results).iter().position(|t| *t == ANSWER);
    assert_eq!(
        (rank(&fused), rank(&reranked)),
        (Some(2), Some(1)),
        "fused {:?}\nreranked {:?}",
        texts(&fused),
        texts(&reranked)
    );
}
