//! The fastembed backend on the real model that `scripts/fetch-model.sh` puts under
//! `models/` (the README's test command runs it first, so these never skip): meaning-based
//! search, the model's edge cases, and clear errors for a missing or wrong model or ONNX
//! Runtime library.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::{config_in, count};
use nightshift::app::open_memory;
use nightshift::config::{Config, EmbeddingConfig};
use nightshift::embed::{EmbedError, Embedder, SemanticEmbedder};
use nightshift::memory::{NewEvent, Role, SearchRequest};
use tempfile::TempDir;

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[test]
fn the_model_embeds_by_meaning_and_handles_edge_cases() {
    let embedder = SemanticEmbedder::load(&common::semantic_config()).unwrap();
    assert_eq!(embedder.dimensions(), 384);
    assert!(embedder
        .model_id()
        .starts_with("fastembed-all-MiniLM-L6-v2-int8-"));
    let long = "the harbour lights were bright that night ".repeat(400);
    let texts = [
        "I adopted a puppy last week",
        "We got a new dog recently",
        "The quarterly tax forms are due in April",
        "",
        long.as_str(),
    ];
    let v = embedder.embed(&texts).unwrap();
    assert_eq!(v.len(), 5);
    for vector in [&v[0], &v[1], &v[2], &v[4]] {
        assert_eq!(vector.len(), 384);
        let norm: f32 = vector.iter().map(|x| x * x).sum();
        assert!((norm - 1.0).abs() < 1e-3, "not unit length: {norm}");
    }
    // No shared content word, yet closer than an unrelated sentence.
    let related = cosine(&v[0], &v[1]);
    let unrelated = cosine(&v[0], &v[2]);
    assert!(
        related > unrelated + 0.2,
        "related {related}, unrelated {unrelated}"
    );
    // An empty text matches nothing; an over-long one is truncated, not an error.
    assert!(v[3].iter().all(|x| *x == 0.0));
    // A text's vector barely depends on its batch-mates.
    let alone = embedder.embed(&[texts[0]]).unwrap();
    assert!(cosine(&alone[0], &v[0]) > 0.99);
}

#[tokio::test]
async fn search_finds_by_meaning_once_the_queue_has_embedded() {
    let dir = TempDir::new().unwrap();
    let mut config = config_in(&dir);
    config.embedding = common::semantic_config();
    let memory = open_memory(&config).await.unwrap();
    memory
        .append(
            "alice",
            "chat",
            &[
                NewEvent::new(Role::User, "I adopted a puppy last week"),
                NewEvent::new(Role::User, "The quarterly tax forms are due in April"),
                NewEvent::new(Role::User, "My sister moved to Porto"),
            ],
        )
        .await
        .unwrap();
    memory
        .append(
            "bob",
            "bob-chat",
            &[NewEvent::new(Role::User, "Bob's dog is called Rex")],
        )
        .await
        .unwrap();
    let request = SearchRequest {
        user_id: "alice".into(),
        query: "new dog".into(),
        top_k: Some(1),
        session_id: Some("chat".into()),
        tags: Vec::new(),
        ..Default::default()
    };
    // No keyword in common, and no vector yet.
    assert!(memory.search(&request).await.unwrap().is_empty());

    let stop = tokio_util::sync::CancellationToken::new();
    let task = memory.spawn_embedder(stop.clone());
    // Bounded wait on the queue, not on the clock.
    for _ in 0..6_000 {
        if memory.embedding_status().await.unwrap().pending == 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    stop.cancel();
    task.await.unwrap();
    assert_eq!(
        count(&memory, "SELECT count(*) FROM chunk_vectors").await,
        4
    );

    let results = memory.search_detailed(&request).await.unwrap();
    assert_eq!(results.degraded, None);
    assert_eq!(results.hits.len(), 1);
    assert_eq!(results.hits[0].text, "I adopted a puppy last week");
    // Bob's dog is the closest text of all, and never reaches Alice.
    let all = memory
        .search(&SearchRequest {
            top_k: Some(10),
            ..request.clone()
        })
        .await
        .unwrap();
    assert!(all.iter().all(|h| !h.text.contains("Rex")));
}

#[test]
fn a_missing_model_or_file_is_an_error_naming_it() {
    let good = common::semantic_config();
    let missing = EmbeddingConfig {
        model_dir: PathBuf::from("/nonexistent/minilm"),
        ..good.clone()
    };
    let err = SemanticEmbedder::load(&missing).err().expect("fails");
    assert!(matches!(err, EmbedError::Model(_)));
    assert!(err.to_string().contains("/nonexistent/minilm"), "{err}");

    // A model folder without its tokenizer.
    let dir = TempDir::new().unwrap();
    for name in [
        "model.onnx",
        "config.json",
        "special_tokens_map.json",
        "tokenizer_config.json",
    ] {
        std::fs::copy(good.model_dir.join(name), dir.path().join(name)).unwrap();
    }
    let partial = EmbeddingConfig {
        model_dir: dir.path().to_path_buf(),
        ..good.clone()
    };
    let err = SemanticEmbedder::load(&partial).err().expect("fails");
    assert!(err.to_string().contains("tokenizer.json"), "{err}");

    // A config.json without the embedding width.
    std::fs::copy(
        good.model_dir.join("tokenizer.json"),
        dir.path().join("tokenizer.json"),
    )
    .unwrap();
    std::fs::write(dir.path().join("config.json"), "{}").unwrap();
    let err = SemanticEmbedder::load(&partial).err().expect("fails");
    assert!(err.to_string().contains("hidden_size"), "{err}");
}

/// Runs `nightshift memory search` with the fastembed backend pointed at `onnxruntime`,
/// in its own process: ONNX Runtime is loaded once per process.
fn search_with_runtime(dir: &Path, onnxruntime: &Path) -> std::process::Output {
    let good = common::semantic_config();
    let config = format!(
        "[embedding]\nbackend = \"fastembed\"\nmodel_dir = {:?}\nonnxruntime = {:?}\n",
        good.model_dir.display().to_string(),
        onnxruntime.display().to_string()
    );
    let path = dir.join("nightshift.toml");
    std::fs::write(&path, config).unwrap();
    Config::load(&path).expect("a valid config");
    Command::new(env!("CARGO_BIN_EXE_nightshift"))
        .env("NIGHTSHIFT_LISTEN", "127.0.0.1:0")
        .current_dir(dir)
        .env("NIGHTSHIFT_DB", dir.join("semantic.db"))
        .args(["--config", path.to_str().unwrap()])
        .args(["memory", "search", "--user", "u", "anything"])
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn a_missing_or_wrong_onnx_runtime_is_a_clear_error_not_a_panic() {
    let dir = TempDir::new().unwrap();
    let d = dir.path();

    let out = search_with_runtime(d, &d.join("no-such-lib.so"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    assert!(
        stderr.contains("no-such-lib.so") && stderr.contains("does not exist"),
        "{stderr}"
    );

    // Not a library at all.
    std::fs::write(d.join("garbage.so"), b"not an ELF file").unwrap();
    let out = search_with_runtime(d, &d.join("garbage.so"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    assert!(stderr.contains("garbage.so"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");

    // A library that says it is ONNX Runtime 1.10: too old for this build.
    let source = d.join("old_ort.c");
    std::fs::write(
        &source,
        r#"
        #include <stddef.h>
        #include <stdint.h>
        typedef struct { const void* (*GetApi)(uint32_t); const char* (*GetVersionString)(void); } OrtApiBase;
        static const void* get_api(uint32_t v) { (void)v; return NULL; }
        static const char* version(void) { return "1.10.0"; }
        static const OrtApiBase base = { get_api, version };
        const OrtApiBase* OrtGetApiBase(void) { return &base; }
        "#,
    )
    .unwrap();
    let lib = d.join("libonnxruntime.so.1.10.0");
    let built = Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&lib)
        .arg(&source)
        .status()
        .expect("a C compiler (cc) to build the fake library");
    assert!(built.success());
    let out = search_with_runtime(d, &lib);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    assert!(
        stderr.contains("1.10.0") && stderr.contains("libonnxruntime.so.1.10.0"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    // The model is loaded before the database is touched: nothing was created.
    assert!(!d.join("semantic.db").exists());
}
