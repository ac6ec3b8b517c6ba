//! Artifacts: content stored once per hash, inline or in the folder by size; the crash
//! window between a file and its row; limits at and past their edge; another user's
//! artifact not found by any door; forgetting a session; and the name and type parsers
//! under any input. A run's artifacts: `tests/artifacts_runs.rs`.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, SystemTime};

use nightshift::access::Actor;
use nightshift::app::App;
use nightshift::artifact::{check_mime_type, check_name, ArtifactError, NewArtifact};
use nightshift::config::Config;
use nightshift::error::{ErrorKind, Kind};
use proptest::prelude::*;
use serde_json::{json, Value};
use tempfile::TempDir;

fn file(name: &str, mime_type: &str, content: &[u8]) -> NewArtifact {
    NewArtifact {
        name: name.into(),
        mime_type: mime_type.into(),
        content: content.to_vec(),
    }
}

async fn app(dir: &TempDir, tweak: impl FnOnce(&mut Config)) -> App {
    let mut config = common::config_in(dir);
    config.artifacts.inline_max_bytes = 16;
    tweak(&mut config);
    common::app_with(&config, None).await
}

async fn count(app: &App, sql: &str) -> i64 {
    common::count(app.memory(), sql).await
}

fn alice() -> Actor {
    Actor::user("alice").unwrap()
}

fn path_in(app: &App, hash: &str) -> PathBuf {
    app.artifacts()
        .folder()
        .unwrap()
        .join(&hash[..2])
        .join(hash)
}

/// Moves a file's modification time `secs` into the past.
fn age(path: &Path, secs: u64) {
    let file = std::fs::File::options().write(true).open(path).unwrap();
    file.set_modified(SystemTime::now() - Duration::from_secs(secs))
        .unwrap();
}

#[tokio::test]
async fn same_bytes_in_two_sessions_are_stored_once_and_outlive_either() {
    let dir = TempDir::new().unwrap();
    let app = app(&dir, |_| {}).await;
    let store = app.artifacts();
    for (bytes, in_folder) in [(b"small".to_vec(), false), (vec![7u8; 1000], true)] {
        let a = store
            .put(
                "alice",
                "s1",
                None,
                &file("a.bin", "application/x-a", &bytes),
            )
            .await
            .unwrap();
        let b = store
            .put(
                "alice",
                "s2",
                None,
                &file("b.bin", "application/x-b", &bytes),
            )
            .await
            .unwrap();
        assert_eq!(a.hash, b.hash);
        assert_eq!(a.hash, blake3::hash(&bytes).to_hex().to_string());
        let sql = format!(
            "SELECT count(*) FROM artifact_contents WHERE hash = '{}' AND in_folder = {}",
            a.hash,
            i64::from(in_folder)
        );
        assert_eq!(count(&app, &sql).await, 1);
        assert_eq!(path_in(&app, &a.hash).exists(), in_folder);
        for id in [&a.artifact_id, &b.artifact_id] {
            let (meta, content) = store.get(&alice(), id).await.unwrap();
            assert_eq!(content, bytes);
            assert_eq!(meta.size, bytes.len() as i64);
        }
        let deleted = store.delete(&alice(), &a.artifact_id).await.unwrap();
        assert!(deleted.deleted);
        assert_eq!(
            count(&app, &sql).await,
            1,
            "the other artifact keeps the content"
        );
        assert_eq!(store.get(&alice(), &b.artifact_id).await.unwrap().1, bytes);
        assert!(matches!(
            store.get(&alice(), &a.artifact_id).await,
            Err(ArtifactError::NotFound(_))
        ));
        // The last one takes its content with it: the row, then the file.
        let deleted = store.delete(&alice(), &b.artifact_id).await.unwrap();
        assert!(deleted.deleted);
        assert_eq!(count(&app, &sql).await, 0);
        assert!(!path_in(&app, &a.hash).exists());
    }
}

#[tokio::test]
async fn content_goes_inline_up_to_the_limit_and_to_the_folder_past_it() {
    let dir = TempDir::new().unwrap();
    let app = app(&dir, |_| {}).await;
    let store = app.artifacts();
    assert_eq!(store.folder().unwrap(), dir.path().join("artifacts"));
    let at = store
        .put("alice", "s", None, &file("at", "text/plain", &[b'x'; 16]))
        .await
        .unwrap();
    let past = store
        .put("alice", "s", None, &file("past", "text/plain", &[b'y'; 17]))
        .await
        .unwrap();
    let inline = format!(
        "SELECT count(*) FROM artifact_contents WHERE hash = '{}' AND length(data) = 16",
        at.hash
    );
    assert_eq!(count(&app, &inline).await, 1);
    assert!(!path_in(&app, &at.hash).exists());
    let folder = format!(
        "SELECT count(*) FROM artifact_contents WHERE hash = '{}' AND data IS NULL",
        past.hash
    );
    assert_eq!(count(&app, &folder).await, 1);
    assert_eq!(
        std::fs::read(path_in(&app, &past.hash)).unwrap(),
        [b'y'; 17]
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path_in(&app, &past.hash))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}

#[tokio::test]
async fn the_crash_window_between_file_and_row_is_collected_or_reported() {
    let dir = TempDir::new().unwrap();
    let app = app(&dir, |_| {}).await;
    let store = app.artifacts();
    // A crash after the file, before the row: a file no row references.
    let orphan = blake3::hash(b"orphan").to_hex().to_string();
    let fresh = blake3::hash(b"fresh").to_hex().to_string();
    for (hash, bytes) in [(&orphan, b"orphan".as_slice()), (&fresh, b"fresh")] {
        let path = path_in(&app, hash);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, bytes).unwrap();
    }
    let temp = path_in(&app, &orphan).with_file_name(format!(".tmp-{orphan}-x"));
    std::fs::write(&temp, b"half").unwrap();
    age(&path_in(&app, &orphan), 2 * 3600);
    age(&temp, 2 * 3600);
    // A referenced file, however old, stays.
    let kept = store
        .put("alice", "s", None, &file("kept", "text/plain", &[1u8; 100]))
        .await
        .unwrap();
    age(&path_in(&app, &kept.hash), 2 * 3600);

    let report = store.collect_garbage().await.unwrap();
    assert_eq!(report.files_removed, 2, "{report:?}");
    assert!(!path_in(&app, &orphan).exists());
    assert!(!temp.exists());
    // A fresh file may be a put in flight: it waits out the grace period.
    assert!(path_in(&app, &fresh).exists());
    assert!(path_in(&app, &kept.hash).exists());

    // The expiry pass runs the same collection and says what it removed.
    age(&path_in(&app, &fresh), 2 * 3600);
    let passes = app
        .consolidator(None)
        .run(&[nightshift::consolidate::Pass::Expiry], None, None)
        .await
        .unwrap();
    assert_eq!(passes[0].counts["artifact_files_removed"], 1, "{passes:?}");
    assert!(!path_in(&app, &fresh).exists());

    // A row whose file is gone reads as a clear error, and a put of the bytes repairs it.
    std::fs::remove_file(path_in(&app, &kept.hash)).unwrap();
    let err = store.get(&alice(), &kept.artifact_id).await.unwrap_err();
    assert!(matches!(err, ArtifactError::ContentMissing { .. }), "{err}");
    assert_eq!(err.kind(), ErrorKind::Internal);
    assert!(err.to_string().contains("missing"), "{err}");
    store
        .put(
            "alice",
            "s",
            None,
            &file("again", "text/plain", &[1u8; 100]),
        )
        .await
        .unwrap();
    assert_eq!(
        store.get(&alice(), &kept.artifact_id).await.unwrap().1,
        [1u8; 100]
    );
    // A file changed behind nightshift's back is not served as if it were the content.
    std::fs::write(path_in(&app, &kept.hash), [2u8; 100]).unwrap();
    assert!(matches!(
        store.get(&alice(), &kept.artifact_id).await,
        Err(ArtifactError::ContentCorrupt { .. })
    ));
    // …and storing the bytes again repairs that too.
    store
        .put(
            "alice",
            "s",
            None,
            &file("third", "text/plain", &[1u8; 100]),
        )
        .await
        .unwrap();
    assert_eq!(
        store.get(&alice(), &kept.artifact_id).await.unwrap().1,
        [1u8; 100]
    );
}

#[tokio::test]
async fn size_and_quota_limits_hold_at_and_past_their_edge() {
    let dir = TempDir::new().unwrap();
    let app = app(&dir, |c| {
        c.artifacts.max_artifact_bytes = 100;
        c.artifacts.max_bytes_per_user = 250;
    })
    .await;
    let store = app.artifacts();
    store
        .put("alice", "s", None, &file("a", "text/plain", &[1u8; 100]))
        .await
        .unwrap();
    let err = store
        .put("alice", "s", None, &file("b", "text/plain", &[2u8; 101]))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::BadInput);
    assert!(
        err.to_string().contains("artifacts.max_artifact_bytes"),
        "{err}"
    );
    store
        .put("alice", "s", None, &file("c", "text/plain", &[3u8; 100]))
        .await
        .unwrap();
    // 200 used: 50 more reach the quota exactly, one more byte passes it.
    let err = store
        .put("alice", "s", None, &file("d", "text/plain", &[4u8; 51]))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Conflict);
    assert!(
        err.to_string().contains("artifacts.max_bytes_per_user"),
        "{err}"
    );
    store
        .put("alice", "s", None, &file("e", "text/plain", &[5u8; 50]))
        .await
        .unwrap();
    // Nothing of the refused ones was written; another user has a quota of their own.
    assert_eq!(count(&app, "SELECT count(*) FROM artifacts").await, 3);
    assert_eq!(
        count(&app, "SELECT count(*) FROM artifact_contents").await,
        3
    );
    store
        .put("bob", "t", None, &file("f", "text/plain", &[6u8; 100]))
        .await
        .unwrap();
}

#[tokio::test]
async fn bad_names_types_and_sessions_are_refused_and_change_nothing() {
    let dir = TempDir::new().unwrap();
    let app = app(&dir, |_| {}).await;
    let store = app.artifacts();
    let long = "n".repeat(256);
    for (name, mime, field) in [
        ("a/b", "text/plain", "artifact name"),
        ("a\0b", "text/plain", "artifact name"),
        ("", "text/plain", "artifact name"),
        ("..", "text/plain", "artifact name"),
        ("tab\there", "text/plain", "artifact name"),
        (long.as_str(), "text/plain", "artifact name"),
        ("ok.txt", "text", "artifact type"),
        ("ok.txt", "text/pl ain", "artifact type"),
        ("ok.txt", "text/plain\0", "artifact type"),
    ] {
        let err = store
            .put("alice", "s", None, &file(name, mime, b"x"))
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::BadInput, "{name:?} {mime:?}");
        assert!(err.to_string().contains(field), "{err}");
    }
    let err = store
        .put(
            "alice",
            "memory:alice",
            None,
            &file("a", "text/plain", b"x"),
        )
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::BadInput);
    assert_eq!(count(&app, "SELECT count(*) FROM artifacts").await, 0);
    assert_eq!(count(&app, "SELECT count(*) FROM sessions").await, 0);
    // The same session id under two users is two sessions: alice's artifact goes to her
    // own (before, this was refused as "in use by another user").
    let bobs = store
        .put("bob", "bobs", None, &file("a", "text/plain", b"x"))
        .await
        .unwrap();
    let alices = store
        .put("alice", "bobs", None, &file("a", "text/plain", b"y"))
        .await
        .unwrap();
    assert_eq!(
        (alices.session_id.as_str(), alices.user_id.as_str()),
        ("bobs", "alice")
    );
    let listed = |user: &'static str| {
        let store = store.clone();
        async move {
            store
                .list(&Actor::user(user).unwrap(), user, Some("bobs"))
                .await
                .unwrap()
        }
    };
    assert_eq!(listed("bob").await, [bobs]);
    assert_eq!(listed("alice").await, [alices]);
    // Unicode names are names.
    let stored = store
        .put(
            "alice",
            "s",
            None,
            &file("Bericht März 📈.csv", "text/csv; charset=utf-8", b"x"),
        )
        .await
        .unwrap();
    assert_eq!(stored.name, "Bericht März 📈.csv");
}

#[tokio::test]
async fn another_users_artifact_is_not_found_in_the_library() {
    let dir = TempDir::new().unwrap();
    let app = app(&dir, |_| {}).await;
    let store = app.artifacts();
    let a = store
        .put("alice", "s", None, &file("a.txt", "text/plain", b"alice's"))
        .await
        .unwrap();
    let bob = Actor::user("bob").unwrap();
    let missing = |r: Result<(), ArtifactError>| {
        let err = r.unwrap_err();
        assert!(matches!(err, ArtifactError::NotFound(_)), "{err}");
        assert_eq!(err.kind(), ErrorKind::NotFound);
        err.to_string()
    };
    let as_bob = missing(store.metadata(&bob, &a.artifact_id).await.map(|_| ()));
    let nowhere = missing(store.metadata(&alice(), "art-nope").await.map(|_| ()));
    assert_eq!(
        as_bob.replace(&a.artifact_id, "ID"),
        nowhere.replace("art-nope", "ID")
    );
    missing(store.get(&bob, &a.artifact_id).await.map(|_| ()));
    missing(store.delete(&bob, &a.artifact_id).await.map(|_| ()));
    assert!(store.list(&bob, "alice", None).await.unwrap().is_empty());
    assert!(store.list(&bob, "bob", None).await.unwrap().is_empty());
    assert_eq!(
        store.list(&alice(), "alice", Some("s")).await.unwrap(),
        std::slice::from_ref(&a)
    );
    assert!(store
        .list(&alice(), "alice", Some("t"))
        .await
        .unwrap()
        .is_empty());
    assert_eq!(
        store.get(&Actor::Operator, &a.artifact_id).await.unwrap().1,
        b"alice's"
    );
}

#[tokio::test]
async fn forgetting_a_session_deletes_its_artifacts_and_their_content() {
    let dir = TempDir::new().unwrap();
    let app = app(&dir, |_| {}).await;
    let store = app.artifacts();
    let small = store
        .put("alice", "s1", None, &file("small", "text/plain", b"tiny"))
        .await
        .unwrap();
    let big = store
        .put("alice", "s1", None, &file("big", "text/plain", &[9u8; 500]))
        .await
        .unwrap();
    let other = store
        .put("alice", "s2", None, &file("kept", "text/plain", b"other"))
        .await
        .unwrap();
    app.memory().forget(&alice(), "s1").await.unwrap();
    for id in [&small.artifact_id, &big.artifact_id] {
        assert!(matches!(
            store.get(&alice(), id).await,
            Err(ArtifactError::NotFound(_))
        ));
    }
    // Inline content went with its rows at once (the trigger); the file waits for the
    // collector, which removes it once past the grace period.
    assert_eq!(
        count(&app, "SELECT count(*) FROM artifact_contents").await,
        1
    );
    assert!(path_in(&app, &big.hash).exists());
    age(&path_in(&app, &big.hash), 2 * 3600);
    let report = store.collect_garbage().await.unwrap();
    assert_eq!(report.files_removed, 1);
    assert!(!path_in(&app, &big.hash).exists());
    assert_eq!(
        store.get(&alice(), &other.artifact_id).await.unwrap().1,
        b"other"
    );
}

fn cli(db: &Path, args: &[&str], stdin: &[u8]) -> Output {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_nightshift"))
        .env_remove("NIGHTSHIFT_CONFIG")
        .env("NIGHTSHIFT_DB", db)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn the_cli_stores_reads_lists_and_deletes_and_hides_others_artifacts() {
    let dir = TempDir::new().unwrap();
    let db = dir.path().join("cli.db");
    let bytes: Vec<u8> = (0..=255u8).cycle().take(70_000).collect();
    let out = cli(
        &db,
        &[
            "--json",
            "artifact",
            "put",
            "--user",
            "alice",
            "--session",
            "s",
            "--name",
            "data.bin",
            "--type",
            "application/x-data",
        ],
        &bytes,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stored: Value = serde_json::from_slice(&out.stdout).unwrap();
    let id = stored["artifact_id"].as_str().unwrap().to_string();
    assert_eq!(stored["size"], 70_000);
    // Past inline_max_bytes (64 KiB by default): in the folder beside the database.
    let hash = stored["hash"].as_str().unwrap();
    assert!(dir
        .path()
        .join("artifacts")
        .join(&hash[..2])
        .join(hash)
        .exists());

    let out = cli(&db, &["artifact", "get", "--user", "alice", &id], b"");
    assert!(out.status.success());
    assert_eq!(out.stdout, bytes);
    let copy = dir.path().join("copy.bin");
    let out = cli(
        &db,
        &[
            "artifact",
            "get",
            "--user",
            "alice",
            "--out",
            copy.to_str().unwrap(),
            &id,
        ],
        b"",
    );
    assert!(out.status.success());
    assert_eq!(std::fs::read(&copy).unwrap(), bytes);
    let out = cli(&db, &["--json", "artifact", "list", "--user", "alice"], b"");
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(listed[0]["artifact_id"], id.as_str());

    // Bob is told it does not exist (exit 3), sees an empty list, and changes nothing.
    for args in [
        vec!["artifact", "get", "--user", "bob", &id],
        vec!["artifact", "delete", "--user", "bob", &id],
        vec!["artifact", "get", "--user", "alice", "art-nope"],
    ] {
        let out = cli(&db, &args, b"");
        assert_eq!(out.status.code(), Some(3), "{args:?}");
        assert!(out.stdout.is_empty());
    }
    let out = cli(&db, &["--json", "artifact", "list", "--user", "bob"], b"");
    assert_eq!(
        serde_json::from_slice::<Value>(&out.stdout).unwrap(),
        json!([])
    );

    // A bad name is bad input (exit 2), named; nothing is stored.
    let out = cli(
        &db,
        &[
            "artifact",
            "put",
            "--user",
            "alice",
            "--session",
            "s",
            "--name",
            "a/b",
        ],
        b"x",
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("artifact name"));

    let out = cli(
        &db,
        &["--json", "artifact", "delete", "--user", "alice", &id],
        b"",
    );
    assert!(out.status.success());
    let out = cli(&db, &["artifact", "get", "--user", "alice", &id], b"");
    assert_eq!(out.status.code(), Some(3));
    assert!(!dir
        .path()
        .join("artifacts")
        .join(&hash[..2])
        .join(hash)
        .exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_serves_content_with_its_type_and_hides_others_artifacts() {
    let api = common::api::TestApi::start(|c| c.artifacts.max_artifact_bytes = 64).await;
    let a = api
        .app
        .artifacts()
        .put(
            "alice",
            "s",
            None,
            &file("Bericht März.csv", "text/csv", b"a,b\n1,2\n"),
        )
        .await
        .unwrap();
    let alice = api.token(Some("alice")).await;
    let bob = api.token(Some("bob")).await;
    let admin = api.token(None).await;
    let meta = api
        .call(
            "GET",
            &format!("/v1/artifacts/{}", a.artifact_id),
            Some(&alice),
            None,
        )
        .await;
    assert_eq!(meta.status, 200);
    assert_eq!(meta.body["hash"], a.hash.as_str());
    let content = api
        .client
        .get(format!(
            "{}/v1/artifacts/{}/content",
            api.base, a.artifact_id
        ))
        .bearer_auth(&alice)
        .send()
        .await
        .unwrap();
    assert_eq!(content.status(), 200);
    assert_eq!(content.headers()["content-type"], "text/csv");
    let disposition = content.headers()["content-disposition"]
        .to_str()
        .unwrap()
        .to_string();
    assert_eq!(
        disposition,
        "attachment; filename=\"Bericht M_rz.csv\"; filename*=UTF-8''Bericht%20M%C3%A4rz%2Ecsv"
    );
    assert_eq!(content.bytes().await.unwrap().as_ref(), b"a,b\n1,2\n");
    let list = api
        .call("GET", "/v1/artifacts?session=s", Some(&alice), None)
        .await;
    assert_eq!(list.body.as_array().unwrap().len(), 1);

    for (method, path) in [
        ("GET", format!("/v1/artifacts/{}", a.artifact_id)),
        ("GET", format!("/v1/artifacts/{}/content", a.artifact_id)),
        ("DELETE", format!("/v1/artifacts/{}", a.artifact_id)),
    ] {
        let reply = api.call(method, &path, Some(&bob), None).await;
        assert_eq!(reply.status, 404, "{method} {path}");
        assert_eq!(reply.body["error"]["code"], "not_found");
    }
    let list = api.call("GET", "/v1/artifacts", Some(&bob), None).await;
    assert_eq!(list.body, json!([]));
    let list = api
        .call("GET", "/v1/artifacts?user=alice", Some(&bob), None)
        .await;
    assert_eq!(list.status, 403);
    // The operator reaches it, naming the user for a list.
    let list = api
        .call("GET", "/v1/artifacts?user=alice", Some(&admin), None)
        .await;
    assert_eq!(list.body.as_array().unwrap().len(), 1);
    // An upload: the body's bytes, typed by `type=` or the request's Content-Type.
    let uploaded = api
        .client
        .post(format!(
            "{}/v1/artifacts?session=up&name=notes.txt",
            api.base
        ))
        .bearer_auth(&alice)
        .header("content-type", "text/plain; charset=utf-8")
        .body("hello")
        .send()
        .await
        .unwrap();
    assert_eq!(uploaded.status(), 201);
    let uploaded: Value = uploaded.json().await.unwrap();
    assert_eq!(uploaded["mime_type"], "text/plain; charset=utf-8");
    assert_eq!(uploaded["session_id"], "up");
    let too_big = api
        .client
        .post(format!(
            "{}/v1/artifacts?session=up&name=big.bin&type=application/x-big",
            api.base
        ))
        .bearer_auth(&alice)
        .body(vec![0u8; 65])
        .send()
        .await
        .unwrap();
    assert_eq!(too_big.status(), 400);
    assert!(too_big
        .text()
        .await
        .unwrap()
        .contains("artifacts.max_artifact_bytes"));
    let bad_name = api
        .client
        .post(format!("{}/v1/artifacts?session=up&name=a%2Fb", api.base))
        .bearer_auth(&alice)
        .body("x")
        .send()
        .await
        .unwrap();
    assert_eq!(bad_name.status(), 400);
    let bobs = api
        .call(
            "GET",
            &format!(
                "/v1/artifacts/{}",
                uploaded["artifact_id"].as_str().unwrap()
            ),
            Some(&bob),
            None,
        )
        .await;
    assert_eq!(bobs.status, 404);
    let gone = api
        .call(
            "DELETE",
            &format!("/v1/artifacts/{}", a.artifact_id),
            Some(&alice),
            None,
        )
        .await;
    assert_eq!(gone.status, 200);
    assert_eq!(gone.body["deleted"], true);
    // Whether the content went too is not told: it would say who else holds the bytes.
    assert!(gone.body.get("content_removed").is_none());
}

proptest! {
    /// Any text at all is a name or a type, or an error naming the field; never a panic.
    /// What is accepted keeps the rules.
    #[test]
    fn any_text_is_a_name_or_a_clear_error(text in any::<String>()) {
        match check_name(&text) {
            Ok(()) => {
                prop_assert!(!text.contains('/') && !text.contains('\0'));
                prop_assert!(!text.chars().any(char::is_control));
                prop_assert!((1..=255).contains(&text.chars().count()));
            }
            Err(err) => prop_assert_eq!(err.field, "artifact name"),
        }
        match check_mime_type(&text) {
            Ok(()) => {
                prop_assert!(text.is_ascii() && text.contains('/'));
                prop_assert!(!text.chars().any(char::is_control));
            }
            Err(err) => prop_assert_eq!(err.field, "artifact type"),
        }
    }

    #[test]
    fn names_and_types_of_any_characters(
        name in "[a-zA-Z0-9 ._\\-/\\x00\\u{80}-\\u{10FFFF}]{0,300}",
        mime in "[a-z+.\\-]{0,12}/[a-z+.\\-]{0,12}(; ?[a-z]{1,5}=[a-z0-9\"]{0,6})?",
    ) {
        let _ = check_name(&name);
        let _ = check_mime_type(&mime);
    }
}
