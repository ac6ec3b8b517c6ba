//! Conversation content as agents and their tools really write it: terminal colours,
//! backspaces, form feeds, NEL, NUL, bidirectional overrides, zero-width joiners, emoji,
//! combining marks, lone carriage returns, very long lines, SQL and markup. It is kept byte
//! for byte through every door (a JSONL append through the CLI, the API, the library),
//! recalled and found by search exactly as written, survives export and import, and is
//! shown escaped where a person reads it (a terminal, the dashboard). Identifiers, names,
//! tags, keys and queries still refuse control characters (tests/hardening.rs).

mod common;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use common::api::TestApi;
use nightshift::access::Actor;
use nightshift::memory::{Memory, MemoryError, NewEvent, NewNote, Role, SearchRequest};
use proptest::prelude::*;
use serde_json::{json, Value};
use tempfile::TempDir;

/// A compact list of naughty strings in the spirit of the Big List of Naughty Strings
/// (written here, not downloaded), weighted towards what terminals and tools emit.
fn corpus() -> Vec<String> {
    let mut all: Vec<String> = [
        // Terminal output: colours, cursor movement, titles, bells.
        "\u{1b}[0;31merror:\u{1b}[0m file not found",
        "\u{1b}[1m\u{1b}[32m✓\u{1b}[0m 12 passed; \u{1b}[33m1 ignored\u{1b}[0m",
        "\u{1b}[2J\u{1b}[H",
        "\u{1b}[?25l\u{1b}[1A\u{1b}[2K",
        "\u{1b}]0;window title\u{7}",
        "\u{1b}]8;;https://example.org\u{1b}\\link\u{1b}]8;;\u{1b}\\",
        "\u{1b}",
        "\u{1b}[",
        "\u{9b}31m (a C1 CSI)",
        // A progress bar redrawn with carriage returns; lone CR; CRLF; LF.
        "downloading  10%\rdownloading  50%\rdownloading 100%\n",
        "\r\r\rreturns first",
        "lone\rreturn",
        "one\r\ntwo\r\n",
        "\n\nmiddle\n\n",
        // Backspace overstrike (man pages), form feed, vertical tab, NEL, bell, DEL.
        "b\u{8}bo\u{8}ol\u{8}ld\u{8}d and _\u{8}u_\u{8}n_\u{8}d_\u{8}e_\u{8}r",
        "page one\u{c}page two",
        "vertical\u{b}tab",
        "line\u{85}next line",
        "\u{7}",
        "\u{7f}",
        // Every C0 control but the whitespace ones, and the C1 controls.
        "\u{1}\u{2}\u{3}\u{4}\u{5}\u{6}\u{7}\u{8}\u{e}\u{f}\u{10}\u{11}\u{12}\u{13}\u{14}\u{15}\
         \u{16}\u{17}\u{18}\u{19}\u{1a}\u{1b}\u{1c}\u{1d}\u{1e}\u{1f}\u{7f}",
        "\u{80}\u{81}\u{82}\u{83}\u{84}\u{86}\u{87}\u{88}\u{89}\u{8a}\u{8b}\u{8c}\u{8d}\u{8e}\
         \u{8f}\u{90}\u{91}\u{92}\u{93}\u{94}\u{95}\u{96}\u{97}\u{98}\u{99}\u{9a}\u{9b}\u{9c}\
         \u{9d}\u{9e}\u{9f}",
        // NUL, alone and inside.
        "\0",
        "\0\0\0",
        "before\0after",
        "/proc/self/cmdline: nightshift\0run\0--db\0x.db\0",
        // Unicode whitespace with a zero-width space (not blank), separators.
        "\t\u{b}\u{c} \u{85}\u{a0}\u{1680}\u{2000}\u{2001}\u{2002}\u{2003}\u{2004}\u{2005}\
         \u{2006}\u{2007}\u{2008}\u{2009}\u{200a}\u{2028}\u{2029}\u{202f}\u{205f}\u{3000}\u{200b}",
        "line\u{2028}separator and paragraph\u{2029}separator",
        "\u{feff}byte order mark",
        "\u{ad}\u{600}\u{61c}\u{6dd}\u{70f}\u{180e}\u{200c}\u{200d}\u{200e}\u{200f}\u{2060}\u{fff9}",
        // Bidirectional overrides and isolates.
        "invoice\u{202e}fdp.exe",
        "\u{202b}right to left\u{202c} and \u{202a}left to right\u{202c}",
        "\u{2066}isolated\u{2069} \u{2067}rtl\u{2069} \u{2068}first strong\u{2069}",
        "مرحبا بالعالم hello עולם",
        "בְּרֵאשִׁית בָּרָא אֱלֹהִים",
        // Emoji, joiners, flags, skin tones, keycaps.
        "🦀🔥💯",
        "👨\u{200d}👩\u{200d}👧\u{200d}👦 family",
        "🏳\u{fe0f}\u{200d}🌈 🇵🇹🇯🇵",
        "👍🏽 👋🏿",
        "1\u{fe0f}\u{20e3} #\u{fe0f}\u{20e3}",
        // Combining marks, Zalgo, scripts, look-alikes.
        "e\u{301} vs é",
        "Z\u{36b}\u{343}\u{36a}a\u{351}\u{357}\u{346}l\u{344}\u{35b}g\u{30c}\u{352}o\u{35f}",
        "田中さんにあげて下さい",
        "사회과학원 어학연구소",
        "ЁЖЗ Ω≈ç√∫˜µ≤≥÷",
        "ｅｖｅｒｙ ＡＢＣ",
        "𝐓𝐡𝐞 𝕢𝕦𝕚𝕔𝕜 ⓑⓡⓞⓦⓝ",
        "ʇunpuɐ ɐ ɟo ɟɐʎ",
        "\u{fffd}\u{fffe}\u{ffff}\u{10ffff}",
        // SQL, FTS query syntax, JSON, shell, format strings, paths.
        "'; DROP TABLE events; --",
        "1' OR '1'='1",
        "\" OR \"\"=\"",
        "% _ \\ %% \\%",
        "NULL",
        "(null)",
        "undefined",
        "NEAR(a b, 3) AND \"unterminated OR * -",
        "{\"role\": \"user\", \"content\": \"nested\"}",
        "\\u0000 \\n \\x1b[0m",
        "$(rm -rf /) `id` ${HOME}",
        "%s%s%s%n {0} {} %d",
        "../../../etc/passwd",
        "C:\\con\\aux",
        // Markup.
        "<script>alert(1)</script>",
        "<img src=x onerror=alert(1)>",
        "&lt;&amp;&#0; ]]> <!-- -->",
        "<svg><style>{}</style></svg>\u{1b}[31m",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    // Very long lines.
    all.push("x".repeat(20_000));
    all.push("\u{1b}[31mred\u{1b}[0m ".repeat(2_000));
    all.push(format!("{}\0", "長".repeat(10_000)));
    all
}

/// `mark{i}x`, a word found only in the `i`th marked event.
fn marker(i: usize) -> String {
    format!("mark{i:03}x")
}

fn nightshift(db: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_nightshift"));
    cmd.current_dir(db.parent().unwrap())
        .env_remove("NIGHTSHIFT_CONFIG")
        .env("NIGHTSHIFT_DB", db)
        .env("NIGHTSHIFT_LISTEN", "127.0.0.1:0")
        .stdin(Stdio::null());
    cmd
}

fn run(db: &Path, args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut cmd = nightshift(db);
    cmd.args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
    if stdin.is_some() {
        cmd.stdin(Stdio::piped());
    }
    let mut child = cmd.spawn().expect("run nightshift");
    if let Some(input) = stdin {
        let mut pipe = child.stdin.take().unwrap();
        let input = input.to_vec();
        std::thread::spawn(move || {
            let _ = pipe.write_all(&input);
        });
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn json_out(db: &Path, args: &[&str]) -> Value {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    serde_json::from_slice(&run(db, &all, None).stdout).expect("JSON on stdout")
}

fn contents(events: &Value) -> Vec<String> {
    events
        .as_array()
        .expect("an array of events")
        .iter()
        .map(|e| e["content"].as_str().expect("content").to_string())
        .collect()
}

fn jsonl(contents: &[String]) -> Vec<u8> {
    let roles = ["user", "assistant", "tool", "system"];
    let mut out = Vec::new();
    for (i, content) in contents.iter().enumerate() {
        out.extend(serde_json::to_vec(&json!({"role": roles[i % 4], "content": content})).unwrap());
        out.push(b'\n');
    }
    out
}

/// What a terminal must never be sent raw: escape sequences, carriage returns, backspaces,
/// NUL, any other control character but newline and tab, bidirectional overrides.
fn raw_control(text: &str) -> Option<char> {
    text.chars().find(|&c| {
        (c.is_control() && !matches!(c, '\n' | '\t'))
            || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
    })
}

async fn open(db: &Path) -> Memory {
    let mut config = nightshift::config::Config::default();
    config.database.path = db.display().to_string();
    nightshift::app::open_memory(&config).await.unwrap()
}

/// The hits of a search of `session` for `query`.
async fn search(memory: &Memory, user: &str, session: &str, query: &str) -> Vec<(i64, String)> {
    memory
        .search(&SearchRequest {
            user_id: user.into(),
            query: query.into(),
            session_id: Some(session.into()),
            top_k: Some(10),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_iter()
        .filter(|h| h.session_id.as_deref() == Some(session))
        .map(|h| (h.sequence.unwrap(), h.text))
        .collect()
}

/// The corpus appended as JSONL through the CLI (standard input, and a file), recalled
/// exactly, each string found by search exactly as written, shown escaped by the CLI's
/// text output, and the same again after an export and an import into another database.
#[test]
fn naughty_strings_go_through_the_cli_byte_for_byte() {
    let dir = TempDir::new().unwrap();
    let db = dir.path().join("text.db");
    let corpus = corpus();
    // All of it in one append, from standard input.
    let appended = {
        let out = run(
            &db,
            &[
                "--json",
                "memory",
                "append",
                "--user",
                "u",
                "--session",
                "raw",
                "--file",
                "-",
            ],
            Some(&jsonl(&corpus)),
        );
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };
    assert_eq!(
        appended["sequences"].as_array().unwrap().len(),
        corpus.len()
    );
    // Each string after a word of its own, from a file.
    let marked: Vec<String> = corpus
        .iter()
        .enumerate()
        .map(|(i, s)| format!("{} {s}", marker(i)))
        .collect();
    let file = dir.path().join("marked.jsonl");
    std::fs::write(&file, jsonl(&marked)).unwrap();
    run(
        &db,
        &[
            "memory",
            "append",
            "--user",
            "u",
            "--session",
            "marked",
            "--file",
            file.to_str().unwrap(),
        ],
        None,
    );

    let recall = |db: &Path, session: &str| {
        contents(&json_out(
            db,
            &[
                "memory",
                "recall",
                "--user",
                "u",
                "--session",
                session,
                "--limit",
                "1000",
            ],
        ))
    };
    assert_eq!(recall(&db, "raw"), corpus);
    assert_eq!(recall(&db, "marked"), marked);

    // Found by search, the hit's text exactly the event's.
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let memory = open(&db).await;
        for (i, content) in marked.iter().enumerate() {
            let hits = search(&memory, "u", "marked", &marker(i)).await;
            assert!(
                hits.contains(&(i as i64 + 1, content.clone())),
                "{} not found: {hits:?}",
                marker(i)
            );
        }
    });
    let found = json_out(
        &db,
        &[
            "memory",
            "search",
            "--user",
            "u",
            "--session",
            "marked",
            &marker(0),
        ],
    );
    assert!(
        found["hits"]
            .as_array()
            .unwrap()
            .iter()
            .any(|h| h["text"] == marked[0].as_str()),
        "{found}"
    );

    // Text for a person: nothing reaches the terminal raw, the escapes are visible.
    for args in [
        &[
            "memory",
            "recall",
            "--user",
            "u",
            "--session",
            "raw",
            "--limit",
            "1000",
        ][..],
        &[
            "memory",
            "search",
            "--user",
            "u",
            "--session",
            "marked",
            &marker(0),
        ][..],
    ] {
        let out = run(&db, args, None);
        let shown = String::from_utf8(out.stdout).unwrap();
        assert_eq!(raw_control(&shown), None, "{args:?}");
        assert!(shown.contains("\\u{1b}[0;31merror:\\u{1b}[0m"), "{args:?}");
    }
    let shown = String::from_utf8(
        run(
            &db,
            &[
                "memory",
                "recall",
                "--user",
                "u",
                "--session",
                "raw",
                "--limit",
                "1000",
            ],
            None,
        )
        .stdout,
    )
    .unwrap();
    for visible in [
        "before\\u{0}after",
        "\\u{7}",
        "invoice\\u{202e}fdp.exe",
        "\\u{8}",
    ] {
        assert!(shown.contains(visible), "{visible}");
    }

    // Exported and imported into another database, it is all there as it was.
    let archive = dir.path().join("u.ndjson");
    run(
        &db,
        &["export", "--user", "u", "--out", archive.to_str().unwrap()],
        None,
    );
    let other = dir.path().join("other.db");
    run(&other, &["import", archive.to_str().unwrap()], None);
    assert_eq!(recall(&other, "raw"), corpus);
    assert_eq!(recall(&other, "marked"), marked);
}

/// The API takes the same content and gives it back exactly (JSON escapes it); the
/// dashboard shows it escaped, a run's output as much as a search hit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_keeps_it_and_the_dashboard_shows_it_escaped() {
    let api = TestApi::start(|_| {}).await;
    let token = api.token(Some("alice")).await;
    let t = Some(token.as_str());
    let corpus = corpus();
    let events: Vec<Value> = corpus
        .iter()
        .map(|c| json!({"role": "tool", "content": c}))
        .collect();
    let appended = api
        .call(
            "POST",
            "/v1/sessions/chat/events",
            t,
            Some(json!({ "events": events })),
        )
        .await;
    assert_eq!(appended.status, 201, "{}", appended.body);
    let recalled = api
        .call("GET", "/v1/sessions/chat/events?limit=1000", t, None)
        .await;
    assert_eq!(recalled.status, 200);
    assert_eq!(contents(&recalled.body), corpus);

    let note = "teacup \u{1b}[0;31mred\u{1b}[0m \0 invoice\u{202e}fdp.exe\u{8}\u{c}";
    let saved = api
        .call("POST", "/v1/notes", t, Some(json!({ "text": note })))
        .await;
    assert!(saved.status == 200 || saved.status == 201, "{}", saved.body);
    let id = saved.body["note_id"].as_str().unwrap();
    let read = api.call("GET", &format!("/v1/notes/{id}"), t, None).await;
    assert_eq!(read.body["content"], note);

    // A run whose output is a tool's coloured text.
    let schedule = api
        .app
        .add_schedule(
            &Actor::Operator,
            "alice",
            &nightshift::spec::ScheduleSpec {
                goal: "run the tests".into(),
                every: Some("1h".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let conn = api.app.db().conn().await.unwrap();
    conn.execute(
        "INSERT INTO schedule_runs (run_id, schedule_id, scheduled_for, status, started_at,
         finished_at, output) VALUES ('run-colour', ?1, 1, 'succeeded', 1, 2, ?2)",
        libsql::params![
            schedule.schedule_id.as_str(),
            "\u{1b}[1;32mok\u{1b}[0m\0\u{85}\u{202e}"
        ],
    )
    .await
    .unwrap();

    // Logged in as a browser would be: the cookie the login answers with.
    let admin = api.token(None).await;
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let login = client
        .post(format!("{}/ui/login", api.base))
        .form(&[("token", admin.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(login.status(), 303);
    let cookie = login
        .headers()
        .get_all(reqwest::header::SET_COOKIE)
        .iter()
        .map(|v| v.to_str().unwrap().split(';').next().unwrap().to_string())
        .collect::<Vec<_>>()
        .join("; ");
    let page = |path: String| {
        let request = client
            .get(format!("{}{path}", api.base))
            .header(reqwest::header::COOKIE, cookie.clone());
        async move {
            let r = request.send().await.unwrap();
            assert_eq!(r.status(), 200, "{path}");
            r.text().await.unwrap()
        }
    };
    let found = page("/ui/search?user=alice&q=teacup".to_string()).await;
    assert!(
        found.contains(
            "teacup \\u{1b}[0;31mred\\u{1b}[0m \\u{0} invoice\\u{202e}fdp.exe\\u{8}\\u{c}"
        ),
        "{found}"
    );
    let runs = page(format!("/ui/schedules/{}", schedule.schedule_id)).await;
    assert!(
        runs.contains("\\u{1b}[1;32mok\\u{1b}[0m\\u{0}\\u{85}\\u{202e}"),
        "{runs}"
    );
    for shown in [&found, &runs] {
        let raw = shown
            .chars()
            .find(|&c| (c.is_control() && !matches!(c, '\n' | '\r' | '\t')) || c == '\u{202e}');
        assert_eq!(raw, None);
    }
}

/// Export a note and a summary holding control characters, import them elsewhere: the
/// import takes what the write paths take.
#[tokio::test]
async fn import_takes_what_the_write_paths_take() {
    let dir = TempDir::new().unwrap();
    let app = common::app_with(&common::config_in(&dir), None).await;
    let memory = app.memory();
    let text = "\u{1b}[0;31mred\u{1b}[0m\0\u{8}\u{c}\u{85}\r";
    memory
        .save_note("alice", &NewNote::new(text))
        .await
        .unwrap();
    memory
        .append("alice", "chat", &[NewEvent::new(Role::Tool, text)])
        .await
        .unwrap();
    let state = memory.read_summary(&Actor::Operator, "chat").await.unwrap();
    memory
        .write_summary(
            &nightshift::memory::SessionKey::new("alice", "chat"),
            state.epoch,
            text,
            1,
        )
        .await
        .unwrap();
    let mut archive = Vec::new();
    app.portable()
        .export(
            &Actor::Operator,
            &nightshift::portable::ExportScope::User("alice".into()),
            1_700_000_000_000,
            &mut archive,
        )
        .await
        .unwrap();
    let path = dir.path().join("alice.ndjson");
    std::fs::write(&path, &archive).unwrap();

    let other = TempDir::new().unwrap();
    let target = common::app_with(&common::config_in(&other), None).await;
    target
        .portable()
        .import(
            &Actor::Operator,
            &nightshift::portable::ImportRequest {
                path,
                format: None,
                user: None,
                dry_run: false,
            },
        )
        .await
        .unwrap();
    let memory = target.memory();
    assert_eq!(memory.notes("alice").await.unwrap()[0].content, text);
    let events = memory.recall(&Actor::Operator, "chat", 10).await.unwrap();
    assert_eq!(events[0].content, text);
    let summary = memory.read_summary(&Actor::Operator, "chat").await.unwrap();
    assert_eq!(summary.summary.as_deref(), Some(text));
}

/// A note holding NUL and escapes is found by an as-of search (SQLite's own full-text
/// index reads it whole) and its change event carries it exactly (SQLite's JSON).
#[tokio::test]
async fn sqlite_reads_content_whole_in_its_index_and_its_json() {
    let (_dir, memory) = common::fresh().await;
    let memory = memory.with_change_events(nightshift::memory::ChangeEvents::new(true, Vec::new()));
    let text = "\u{1b}[1mbold\u{1b}[0m\0teapot \u{8}\u{85}";
    let saved = memory
        .save_note("alice", &NewNote::new(text))
        .await
        .unwrap();
    let now = memory.clock().now_ms();
    let found = memory
        .search_as_of("alice", "teapot", now, 5)
        .await
        .unwrap();
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].content, text);
    let conn = memory.db().conn().await.unwrap();
    let payload: String = nightshift::db::query_scalar(
        &conn,
        "SELECT payload_json FROM memory_changes WHERE user_id = 'alice'",
        (),
    )
    .await
    .unwrap()
    .unwrap();
    let payload: Value = serde_json::from_str(&payload).unwrap();
    assert_eq!(payload["note_id"], saved.note_id.as_str());
    assert_eq!(payload["content"], text);
}

/// Whatever the text, an append is kept exactly and recalled and found as it was, or
/// refused as blank or too long, nothing stored; a note the same.
fn any_content() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        3 => any::<String>(),
        2 => "\\PC{0,30}",
        2 => prop::sample::select(vec![
            "\u{1b}[0;31m", "\u{1b}[0m", "\u{8}", "\u{c}", "\u{85}", "\r", "\r\n", "\n",
            "\0", "\u{7f}", "\u{9b}", "\u{2028}", "\u{202e}", "\u{200d}", "\u{301}", "🦀",
            " ", "\t", "word",
        ])
        .prop_map(str::to_string),
    ];
    prop::collection::vec(piece, 0..6).prop_map(|p| p.concat())
}

#[test]
fn any_content_comes_back_exactly_or_is_refused_as_blank() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let dir = TempDir::new().unwrap();
    let memory = rt.block_on(common::memory_in(&dir));
    let max = memory.limits().max_text_bytes;
    let cases = std::cell::Cell::new(0usize);
    proptest!(ProptestConfig::with_cases(96), |(content in any_content())| {
        let case = cases.get() + 1;
        cases.set(case);
        let session = format!("p{case}");
        let blank = content.trim().is_empty();
        rt.block_on(async {
            let appended = memory
                .append("u", &session, &[NewEvent::new(Role::Tool, content.clone())])
                .await;
            let saved = memory.save_note("u", &NewNote::new(content.clone())).await;
            if blank || content.len() > max {
                prop_assert!(matches!(appended, Err(MemoryError::Input(_))), "{appended:?}");
                prop_assert!(matches!(saved, Err(MemoryError::Input(_))), "{saved:?}");
                prop_assert!(memory.recall(&Actor::Operator, &session, 10).await.is_err());
                return Ok(());
            }
            prop_assert_eq!(appended.unwrap(), vec![1]);
            let events = memory.recall(&Actor::Operator, &session, 10).await.unwrap();
            prop_assert_eq!(events.len(), 1);
            prop_assert_eq!(&events[0].content, &content);
            let note = memory.note("u", &saved.unwrap().note_id).await.unwrap();
            prop_assert_eq!(&note.content, &content);
            // Found by a word of its own, the hit's text exactly what was appended.
            let marked = format!("{} {content}", marker(case));
            memory
                .append("u", &session, &[NewEvent::new(Role::Tool, marked.clone())])
                .await
                .unwrap();
            let hits = search(&memory, "u", &session, &marker(case)).await;
            prop_assert!(hits.contains(&(2, marked)), "{:?}", hits);
            Ok(())
        })?;
    });
}
