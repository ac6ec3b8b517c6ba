//! nightshift tried as a hostile user would, through the binary: inputs that overflow,
//! break the text rules, never end, or name someone else's data. Each answer is a clear
//! error with the documented exit code; none is a crash (101), and nothing changes.

mod common;

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::Value;
use tempfile::TempDir;

fn nightshift(dir: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_nightshift"));
    cmd.env("NIGHTSHIFT_LISTEN", "127.0.0.1:0");
    cmd.current_dir(dir)
        .env_remove("NIGHTSHIFT_CONFIG")
        .env("NIGHTSHIFT_DB", dir.join("hard.db"))
        .stdin(Stdio::null());
    cmd
}

fn run(dir: &Path, args: &[&str]) -> Output {
    nightshift(dir).args(args).output().expect("run nightshift")
}

fn with_stdin(dir: &Path, args: &[&str], input: &[u8]) -> Output {
    let mut child = nightshift(dir)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    out
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn json(dir: &Path, args: &[&str]) -> Value {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let out = run(dir, &all);
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    serde_json::from_slice(&out.stdout).expect("JSON on stdout")
}

/// Asserts the exit code, that stderr names `needle`, and that nothing panicked.
fn refused(out: &Output, code: i32, needle: &str) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(code), "{err}");
    assert!(err.contains(needle), "expected {needle:?} in: {err}");
    assert!(!err.contains("panicked"), "{err}");
}

fn count(dir: &Path, sql: &str) -> i64 {
    let db = dir.join("hard.db");
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let mut config = nightshift::config::Config::default();
        config.database.path = db.display().to_string();
        let memory = nightshift::app::open_memory(&config).await.unwrap();
        common::count(&memory, sql).await
    })
}

#[test]
fn durations_that_overflow_are_bad_input_naming_the_field() {
    let dir = TempDir::new().unwrap();
    let d = dir.path();
    for every in [
        "2305843009213693952s",
        "9223372036854775807s",
        "1000000000000h",
        "99999999999999999999999999s",
        "3651d",
    ] {
        let out = run(
            d,
            &[
                "schedule", "add", "--user", "c", "--goal", "g", "--every", every,
            ],
        );
        refused(&out, 2, "every");
        assert!(stderr(&out).contains("10 years"), "{}", stderr(&out));
    }
    for when in [
        "every 2305843009213693952 seconds",
        "in 9223372036854775807 seconds",
        "every 99999999999 weeks",
    ] {
        let out = run(
            d,
            &[
                "schedule", "add", "--user", "c", "--goal", "g", "--when", when,
            ],
        );
        refused(&out, 2, "when");
    }
    // A catch-up of every missed occurrence cannot be asked of an interval that wraps.
    let out = run(
        d,
        &[
            "schedule",
            "add",
            "--user",
            "c",
            "--goal",
            "g",
            "--every",
            "9223372036854775807s",
            "--catch-up",
            "all",
        ],
    );
    refused(&out, 2, "every");
    assert_eq!(count(d, "SELECT count(*) FROM schedules"), 0);

    // The same in a config file: `config check` says so, and `run` exits 4 before it
    // touches the database, naming the entry.
    let config = d.join("nightshift.toml");
    std::fs::write(
        &config,
        "[[schedules]]\nname = \"ok\"\nuser = \"c\"\ngoal = \"g\"\nevery = \"1h\"\n\
         [[schedules]]\nname = \"huge\"\nuser = \"c\"\ngoal = \"g\"\nevery = \"2305843009213693952s\"\n",
    )
    .unwrap();
    let out = run(d, &["config", "check", config.to_str().unwrap()]);
    refused(&out, 4, "schedules[1].every");
    let out = run(d, &["--config", config.to_str().unwrap(), "run"]);
    refused(&out, 4, "schedules[1].every");
}

/// Conversation content is kept as written, control characters and NUL included; every
/// other text (goals, names, queries, tags, keys, categories, ids) refuses them.
#[test]
fn content_is_kept_as_written_and_other_text_refuses_control_characters() {
    let dir = TempDir::new().unwrap();
    let d = dir.path();
    for content in [
        &b"abc\x00def"[..],
        b"\x00\x00\x00",
        b"\x07\x1b\x7f",
        b"\x1b[0;31mred\x1b[0m",
    ] {
        let out = with_stdin(d, &["memory", "save", "--user", "alice", "-"], content);
        assert!(out.status.success(), "{content:?}: {}", stderr(&out));
    }
    let notes = json(d, &["memory", "notes", "--user", "alice"]);
    let mut kept: Vec<&str> = notes
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["content"].as_str().unwrap())
        .collect();
    kept.sort_unstable();
    assert_eq!(
        kept,
        [
            "\0\0\0",
            "\u{7}\u{1b}\u{7f}",
            "\u{1b}[0;31mred\u{1b}[0m",
            "abc\0def"
        ]
    );
    let out = with_stdin(
        d,
        &[
            "memory",
            "append",
            "--user",
            "alice",
            "--session",
            "s",
            "--role",
            "user",
            "-",
        ],
        b"before\x00after\x08\x0c",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let out = with_stdin(
        d,
        &["memory", "append", "--user", "alice", "--session", "s", "--file", "-"],
        b"{\"role\": \"user\", \"content\": \"fine\"}\n{\"role\": \"tool\", \"content\": \"before\\u0000after\\u001b[2J\\u0085\"}\n",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let events = json(
        d,
        &["memory", "recall", "--user", "alice", "--session", "s"],
    );
    let contents: Vec<&str> = events
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["content"].as_str().unwrap())
        .collect();
    assert_eq!(
        contents,
        [
            "before\0after\u{8}\u{c}",
            "fine",
            "before\0after\u{1b}[2J\u{85}"
        ]
    );
    // Blank content is still refused, and so is a whole JSONL append holding a blank line
    // of content.
    let out = with_stdin(
        d,
        &["memory", "save", "--user", "alice", "-"],
        " \n\t\u{85}".as_bytes(),
    );
    refused(&out, 2, "empty");
    let out = with_stdin(
        d,
        &["memory", "append", "--user", "alice", "--session", "s", "--file", "-"],
        b"{\"role\": \"user\", \"content\": \"fine\"}\n{\"role\": \"user\", \"content\": \" \\u0085 \"}\n",
    );
    refused(&out, 2, "line 2");
    let events_before = count(d, "SELECT count(*) FROM events");
    let notes_before = count(d, "SELECT count(*) FROM notes");
    for (field, args) in [
        (
            "goal",
            vec![
                "schedule", "add", "--user", "c", "--goal", "a\u{1}b", "--every", "1h",
            ],
        ),
        (
            "name",
            vec![
                "schedule",
                "add",
                "--user",
                "c",
                "--goal",
                "g",
                "--name",
                "n\u{1b}[31m",
                "--every",
                "1h",
            ],
        ),
        (
            "query",
            vec!["memory", "search", "--user", "alice", "x\u{1b}y"],
        ),
        (
            "tag",
            vec!["memory", "save", "--user", "alice", "--tag", "t\u{7}", "ok"],
        ),
        (
            "key",
            vec!["memory", "save", "--user", "alice", "--key", "k\u{7}", "ok"],
        ),
        (
            "category",
            vec![
                "memory",
                "save",
                "--user",
                "alice",
                "--category",
                "c\u{1b}[2J",
                "ok",
            ],
        ),
        (
            "session id",
            vec![
                "memory",
                "append",
                "--user",
                "alice",
                "--session",
                "s\u{8}",
                "--role",
                "user",
                "ok",
            ],
        ),
        (
            "event name",
            vec![
                "memory",
                "append",
                "--user",
                "alice",
                "--session",
                "s",
                "--role",
                "user",
                "--name",
                "Ann\u{85}",
                "ok",
            ],
        ),
    ] {
        let out = run(d, &args);
        refused(&out, 2, field);
    }
    // Nothing was stored by any of it.
    assert_eq!(count(d, "SELECT count(*) FROM notes"), notes_before);
    assert_eq!(count(d, "SELECT count(*) FROM events"), events_before);
    assert_eq!(count(d, "SELECT count(*) FROM schedules"), 0);

    // What is accepted comes back byte for byte, tabs and newlines included.
    let text = "line one\n\tline two\r\nüñíçødé 🦀";
    let saved = json(d, &["memory", "save", "--user", "alice", text]);
    let notes = json(d, &["memory", "notes", "--user", "alice"]);
    assert_eq!(notes[0]["content"], text);
    assert_eq!(notes[0]["note_id"], saved["note_id"]);
}

#[test]
fn user_ids_and_names_follow_one_rule_and_are_never_echoed_raw() {
    let dir = TempDir::new().unwrap();
    let d = dir.path();
    let long = "u".repeat(100_000);
    for user in ["a\u{1b}[31m", long.as_str(), " alice", ""] {
        let out = run(
            d,
            &[
                "schedule", "add", "--user", user, "--goal", "g", "--every", "1h",
            ],
        );
        refused(&out, 2, "user");
        let out = run(d, &["memory", "save", "--user", user, "note"]);
        refused(&out, 2, "user");
    }
    let name = "n".repeat(100_000);
    let out = run(
        d,
        &[
            "schedule", "add", "--user", "c", "--goal", "g", "--name", &name, "--every", "1h",
        ],
    );
    refused(&out, 2, "name");
    // An error echoing a hostile id shows it escaped.
    let out = run(d, &["schedule", "show", "sch-\u{1b}[2J"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(!stderr(&out).contains('\u{1b}'), "{}", stderr(&out));
}

#[test]
fn a_closed_stdout_ends_the_command_quietly() {
    let dir = TempDir::new().unwrap();
    let d = dir.path();
    let events: String = (0..400)
        .map(|i| {
            format!(
                "{{\"role\": \"user\", \"content\": \"message number {i} {}\"}}\n",
                "padding ".repeat(40)
            )
        })
        .collect();
    let out = with_stdin(
        d,
        &[
            "memory",
            "append",
            "--user",
            "u",
            "--session",
            "long",
            "--file",
            "-",
        ],
        events.as_bytes(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    for json in [false, true] {
        let mut cmd = nightshift(d);
        if json {
            cmd.arg("--json");
        }
        let mut child = cmd
            .args(["memory", "recall", "--session", "long", "--limit", "400"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // `| head -1`: read a little, then close the pipe.
        let mut stdout = child.stdout.take().unwrap();
        let mut first = [0u8; 16];
        let _ = stdout.read(&mut first);
        drop(stdout);
        let out = child.wait_with_output().unwrap();
        let err = stderr(&out);
        assert!(
            !err.contains("panicked") && !err.contains("Broken pipe"),
            "{err}"
        );
        // The command's work is done: it ends quietly, and successfully.
        assert_eq!(out.status.code(), Some(0), "{err}");
    }
}

#[test]
fn input_is_read_only_up_to_its_limit() {
    let dir = TempDir::new().unwrap();
    let d = dir.path();
    // 300 MB offered on stdin: refused after the limit, the rest never read (the writer
    // finds the pipe closed long before it is done).
    let mut child = nightshift(d)
        .args(["memory", "save", "--user", "alice", "-"])
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        let chunk = vec![b'x'; 1 << 20];
        let mut written = 0usize;
        for _ in 0..300 {
            if stdin.write_all(&chunk).is_err() {
                break;
            }
            written += chunk.len();
        }
        written
    });
    let out = child.wait_with_output().unwrap();
    let written = writer.join().unwrap();
    refused(&out, 2, "over the limit");
    assert!(written < 50 << 20, "{written} bytes were taken");

    // A 30 MB JSONL input is over the import limit; an event with a 100 KiB payload is
    // refused by the payload limit, and a line of 1 MiB by the line limit, naming it.
    let huge = "x".repeat(30 << 20);
    let out = with_stdin(
        d,
        &[
            "memory",
            "append",
            "--user",
            "u",
            "--session",
            "s",
            "--file",
            "-",
        ],
        huge.as_bytes(),
    );
    refused(&out, 2, "over the limit");
    let append = [
        "memory",
        "append",
        "--user",
        "u",
        "--session",
        "s",
        "--file",
        "-",
    ];
    let event = |payload: &str| {
        format!("{{\"role\": \"tool\", \"content\": \"result\", \"payload\": {{\"data\": \"{payload}\"}}}}\n")
    };
    let out = with_stdin(d, &append, event(&"p".repeat(100 << 10)).as_bytes());
    refused(&out, 2, "payload");
    let lines = format!("{}{}", event("small"), event(&"p".repeat(1 << 20)));
    let out = with_stdin(d, &append, lines.as_bytes());
    refused(&out, 2, "line 2");
    refused(&out, 2, "memory.max_import_line_bytes");
    assert_eq!(count(d, "SELECT count(*) FROM events"), 0);
}

#[test]
fn numbers_out_of_range_are_refused_not_clamped() {
    let dir = TempDir::new().unwrap();
    let d = dir.path();
    json(
        d,
        &[
            "memory",
            "append",
            "--user",
            "u",
            "--session",
            "s",
            "--role",
            "user",
            "hi",
        ],
    );
    for budget in ["0", "8001", "999999"] {
        let out = run(
            d,
            &[
                "memory",
                "context",
                "--user",
                "u",
                "--session",
                "s",
                "--budget",
                budget,
            ],
        );
        refused(&out, 2, "budget");
    }
    let out = run(d, &["memory", "recall", "--session", "s", "--limit", "0"]);
    refused(&out, 2, "limit");
    let out = run(d, &["schedule", "list", "--limit", "0"]);
    refused(&out, 2, "limit");
    let out = run(d, &["schedule", "list", "--limit=-5"]);
    refused(&out, 2, "limit");
    let out = run(d, &["schedule", "list", "--status", "bogus"]);
    refused(&out, 2, "--status");
    for (flag, value) in [
        ("--max-attempts", "0"),
        ("--max-attempts", "9223372036854775807"),
        ("--timeout-secs", "=-1"),
        ("--timeout-secs", "999999999999"),
        ("--max-turns", "0"),
        ("--max-cost", "NaN"),
        ("--max-cost", "-1"),
        ("--max-cost", "inf"),
    ] {
        let arg = if let Some(v) = value.strip_prefix('=') {
            format!("{flag}={v}")
        } else {
            format!("{flag}={value}")
        };
        let out = run(
            d,
            &[
                "schedule", "add", "--user", "c", "--goal", "g", "--every", "1h", &arg,
            ],
        );
        refused(
            &out,
            2,
            flag.trim_start_matches('-').replace('-', "_").as_str(),
        );
    }
    let schedule = json(
        d,
        &[
            "schedule", "add", "--user", "c", "--goal", "g", "--every", "1h",
        ],
    );
    let id = schedule["schedule_id"].as_str().unwrap();
    let out = run(d, &["schedule", "runs", id, "--limit", "0"]);
    refused(&out, 2, "limit");
}

#[test]
fn natural_language_is_refused_when_it_contradicts_itself_and_echoed_otherwise() {
    let dir = TempDir::new().unwrap();
    let d = dir.path();
    let out = run(
        d,
        &[
            "schedule",
            "add",
            "--user",
            "c",
            "--goal",
            "g",
            "--when",
            "every morning at 7pm",
        ],
    );
    refused(&out, 2, "contradicts");
    let out = run(
        d,
        &[
            "schedule",
            "add",
            "--user",
            "c",
            "--goal",
            "g",
            "--when",
            "daily at 5",
            "--tz",
            "Europe/Lisbon",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("understood: at 05:00 every day (Europe/Lisbon)"),
        "{text}"
    );
    // One-shots keep the zone they were given in.
    let shown = json(
        d,
        &[
            "schedule",
            "add",
            "--user",
            "c",
            "--goal",
            "g",
            "--at",
            "2034-01-15 09:00",
            "--tz",
            "America/New_York",
        ],
    );
    assert_eq!(shown["timezone"], "America/New_York");
    assert_eq!(shown["next_run_at"], "2034-01-15T09:00:00-05:00");
}

/// On the command line a session id is also one user's: `--user` names whose; without
/// it the operator reaches the one session of that id, and is refused (exit 2) when
/// several users have one. No one appends to a reserved id.
#[test]
fn the_command_line_names_a_session_with_its_user() {
    let dir = TempDir::new().unwrap();
    let d = dir.path();
    for user in ["alice", "bob"] {
        let appended = json(
            d,
            &[
                "memory",
                "append",
                "--user",
                user,
                "--session",
                "chat",
                "--role",
                "user",
                user,
            ],
        );
        assert_eq!(appended["sequences"], serde_json::json!([1]), "{user}");
    }
    for user in ["alice", "bob"] {
        let recalled = json(
            d,
            &["memory", "recall", "--session", "chat", "--user", user],
        );
        assert_eq!(recalled[0]["content"], user);
    }
    for command in ["recall", "summary", "forget"] {
        let out = run(d, &["memory", command, "--session", "chat"]);
        refused(&out, 2, "2 users have a session `chat`");
    }
    json(
        d,
        &["memory", "forget", "--session", "chat", "--user", "alice"],
    );
    let left = json(d, &["memory", "recall", "--session", "chat"]);
    assert_eq!(left[0]["content"], "bob", "one user left with the id");
    for session in ["memory:alice", "memory@x", "scheduled:sch-1"] {
        let out = run(
            d,
            &[
                "memory",
                "append",
                "--user",
                "alice",
                "--session",
                session,
                "--role",
                "user",
                "x",
            ],
        );
        refused(&out, 2, "reserved");
    }
}

#[test]
fn exit_codes_come_from_error_kinds_in_every_command_family() {
    let dir = TempDir::new().unwrap();
    let d = dir.path();
    let schedule = json(
        d,
        &[
            "schedule", "add", "--user", "alice", "--goal", "g", "--every", "1h",
        ],
    );
    let id = schedule["schedule_id"].as_str().unwrap().to_string();
    json(
        d,
        &[
            "memory",
            "append",
            "--user",
            "alice",
            "--session",
            "a-chat",
            "--role",
            "user",
            "hi",
        ],
    );

    // Not found, also for another user's schedule or session.
    for args in [
        vec!["schedule", "show", &id, "--user", "bob"],
        vec!["schedule", "pause", &id, "--user", "bob"],
        vec!["schedule", "resume", &id, "--user", "bob"],
        vec!["schedule", "delete", &id, "--user", "bob"],
        vec!["schedule", "runs", &id, "--user", "bob"],
        vec!["schedule", "run-now", &id, "--user", "bob"],
        vec!["memory", "summary", "--session", "a-chat", "--user", "bob"],
        vec!["memory", "recall", "--session", "a-chat", "--user", "bob"],
        vec!["memory", "forget", "--session", "a-chat", "--user", "bob"],
        vec!["outbox", "retry", "msg-nope"],
    ] {
        let out = run(d, &args);
        assert_eq!(out.status.code(), Some(3), "{args:?}: {}", stderr(&out));
    }
    // Nothing of alice's was changed by bob's tries.
    let shown = json(d, &["schedule", "show", &id]);
    assert_eq!(shown["status"], "active");
    assert_eq!(
        json(d, &["memory", "recall", "--session", "a-chat"])
            .as_array()
            .unwrap()
            .len(),
        1
    );

    // Conflict: valid, but not in this state.
    let out = run(d, &["schedule", "resume", &id]);
    refused(&out, 5, "not paused");

    // Configuration: an unreadable token file, a database URL nobody knows.
    let config = d.join("token.toml");
    std::fs::write(
        &config,
        "[database]\npath = \"http://127.0.0.1:9\"\nauth_token_file = \"/nonexistent/token\"\n",
    )
    .unwrap();
    for args in [
        vec!["memory", "notes", "--user", "u"],
        vec!["schedule", "list"],
        vec!["db", "status"],
        vec!["run"],
    ] {
        let out = nightshift(d)
            .env("NIGHTSHIFT_CONFIG", &config)
            .env_remove("NIGHTSHIFT_DB")
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(4), "{args:?}: {}", stderr(&out));
    }
    for args in [
        vec!["--db", "ftp://x", "memory", "notes", "--user", "u"],
        vec!["--db", "ftp://x", "run"],
    ] {
        let out = run(d, &args);
        refused(&out, 4, "ftp");
    }
}

#[test]
fn run_refuses_a_configuration_that_cannot_work_with_exit_4() {
    let dir = TempDir::new().unwrap();
    let d = dir.path();
    for (text, key) in [
        ("[embedding]\nbackend = \"fastembed\"\nmodel_dir = \"/nonexistent/model\"\n", "embedding"),
        (
            "[[schedules]]\nname = \"x\"\nuser = \"u\"\ngoal = \"g\"\ncron = \"0 9 * * *\"\ntz = \"Mars/Olympus\"\n",
            "schedules[0].tz",
        ),
        (
            "[[schedules]]\nname = \"x\"\nuser = \"u\"\ngoal = \"g\"\ncron = \"61 * * * *\"\n",
            "schedules[0].cron",
        ),
        (
            "[[schedules]]\nname = \"x\"\nuser = \"u\"\ngoal = \"g\"\ncron = \"0 9 * * *\"\noverlap = \"skp\"\n",
            "skp",
        ),
        (
            "[[schedules]]\nname = \"x\"\nuser = \"u\"\ngoal = \"g\"\nevery = \"1h\"\nchannel = \"nowhere\"\n",
            "schedules[0].channel",
        ),
        ("[consolidation]\ncron = \"0 3 * *\"\n", "consolidation.cron"),
        (
            "[runtime]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:1/v1\"\nmodel = \"m\"\napi_key_env = \"NIGHTSHIFT_TEST_UNSET_KEY\"\n",
            "runtime.api_key_env",
        ),
    ] {
        let config = d.join("bad.toml");
        std::fs::write(&config, text).unwrap();
        let out = run(d, &["config", "check", config.to_str().unwrap()]);
        refused(&out, 4, key);
        let out = nightshift(d)
            .env("NIGHTSHIFT_DB", d.join("never.db"))
            .args(["--config", config.to_str().unwrap(), "run"])
            .output()
            .unwrap();
        refused(&out, 4, key);
        // Refused before the database was touched.
        assert!(!d.join("never.db").exists(), "{key}");
    }
}
