//! The binary's contract: JSON shapes, exit codes, clear errors, and `run`'s lifecycle.

mod common;

use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::Value;
use tempfile::TempDir;

fn nightshift(dir: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_nightshift"));
    cmd.env("NIGHTSHIFT_LISTEN", "127.0.0.1:0");
    cmd.current_dir(dir)
        .env_remove("NIGHTSHIFT_CONFIG")
        .env("NIGHTSHIFT_DB", dir.join("cli.db"))
        .stdin(Stdio::null());
    cmd
}

fn run(dir: &Path, args: &[&str]) -> Output {
    nightshift(dir).args(args).output().expect("run nightshift")
}

fn json(dir: &Path, args: &[&str]) -> Value {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let out = run(dir, &all);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON on stdout")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn note_lifecycle_through_the_cli() {
    let dir = TempDir::new().unwrap();
    let d = dir.path();
    let saved = json(
        d,
        &[
            "memory",
            "save",
            "--user",
            "alice",
            "--tag",
            "drinks",
            "Alice drinks oolong tea",
        ],
    );
    let id = saved["note_id"].as_str().unwrap().to_string();
    assert!(id.starts_with("note-"));

    let found = json(d, &["memory", "search", "--user", "alice", "oolong"]);
    assert_eq!(found["degraded"], false);
    let hits = found["hits"].as_array().unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0]["note_id"], id.as_str());
    assert_eq!(hits[0]["source"], "note");
    assert_eq!(hits[0]["text"], "Alice drinks oolong tea");
    assert!(hits[0]["score"].is_number());

    json(
        d,
        &[
            "memory",
            "update",
            "--user",
            "alice",
            &id,
            "Alice drinks rooibos",
        ],
    );
    assert_eq!(
        json(d, &["memory", "search", "--user", "alice", "oolong"])["hits"],
        Value::Array(vec![])
    );
    json(d, &["memory", "delete", "--user", "alice", &id]);
    assert_eq!(
        json(d, &["memory", "search", "--user", "alice", "rooibos"])["hits"],
        Value::Array(vec![])
    );

    let out = run(d, &["memory", "delete", "--user", "alice", &id]);
    assert_eq!(out.status.code(), Some(3));
    assert!(stderr(&out).contains(&id), "{}", stderr(&out));
}

#[test]
fn another_users_note_is_not_found_and_unchanged() {
    let dir = TempDir::new().unwrap();
    let d = dir.path();
    let id = json(d, &["memory", "save", "--user", "bob", "bob secret"])["note_id"]
        .as_str()
        .unwrap()
        .to_string();
    for args in [
        vec!["memory", "update", "--user", "eve", id.as_str(), "pwned"],
        vec!["memory", "delete", "--user", "eve", id.as_str()],
    ] {
        let out = run(d, &args);
        assert_eq!(out.status.code(), Some(3), "{args:?}");
        assert!(stderr(&out).contains("no note"), "{}", stderr(&out));
    }
    let hits = json(d, &["memory", "search", "--user", "bob", "secret"]);
    assert_eq!(hits["hits"][0]["text"], "bob secret");
}

#[test]
fn conversations_through_the_cli() {
    let dir = TempDir::new().unwrap();
    let d = dir.path();
    let appended = json(
        d,
        &[
            "memory",
            "append",
            "--user",
            "u",
            "--session",
            "chat",
            "--role",
            "user",
            "book the dentist",
        ],
    );
    assert_eq!(appended["sequences"], serde_json::json!([1]));
    let file = d.join("events.jsonl");
    std::fs::write(&file, "{\"role\":\"assistant\",\"content\":\"which day?\"}\n{\"role\":\"user\",\"content\":\"tuesday\"}\n").unwrap();
    let appended = json(
        d,
        &[
            "memory",
            "append",
            "--user",
            "u",
            "--session",
            "chat",
            "--file",
            file.to_str().unwrap(),
        ],
    );
    assert_eq!(appended["sequences"], serde_json::json!([2, 3]));

    let events = json(
        d,
        &["memory", "recall", "--session", "chat", "--limit", "2"],
    );
    let events = events.as_array().unwrap();
    assert_eq!(events.len(), 2);
    assert_eq!(events[0]["content"], "which day?");
    assert_eq!(events[1]["sequence"], 3);

    let hits = json(
        d,
        &[
            "memory",
            "search",
            "--user",
            "u",
            "--session",
            "chat",
            "dentist",
        ],
    );
    let hits = &hits["hits"];
    assert_eq!(hits[0]["source"], "conversation");
    assert_eq!(hits[0]["session_id"], "chat");
    assert_eq!(hits[0]["sequence"], 1);

    let sessions = json(d, &["memory", "sessions", "--user", "u"]);
    assert_eq!(sessions[0]["session_id"], "chat");

    // A malformed line: reported by number, nothing from the file stored.
    std::fs::write(
        &file,
        "{\"role\":\"user\",\"content\":\"fine\"}\n{\"role\":\"user\",\"content\":oops}\n",
    )
    .unwrap();
    let out = run(
        d,
        &[
            "memory",
            "append",
            "--user",
            "u",
            "--session",
            "chat",
            "--file",
            file.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("line 2"), "{}", stderr(&out));
    assert_eq!(
        json(d, &["memory", "recall", "--session", "chat"])
            .as_array()
            .unwrap()
            .len(),
        3
    );

    json(d, &["memory", "forget", "--session", "chat"]);
    let out = run(d, &["memory", "recall", "--session", "chat"]);
    assert_eq!(out.status.code(), Some(3));
}

#[test]
fn bad_input_is_a_clear_error() {
    let dir = TempDir::new().unwrap();
    let d = dir.path();
    let out = run(d, &["memory", "save", "--user", "u", ""]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("empty"), "{}", stderr(&out));

    let out = run(
        d,
        &[
            "memory",
            "append",
            "--user",
            "u",
            "--session",
            "s",
            "--role",
            "robot",
            "hi",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("robot"), "{}", stderr(&out));

    let out = run(
        d,
        &["memory", "search", "--user", "u", "--top-k", "50", "x"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("top_k"), "{}", stderr(&out));

    let out = nightshift(d)
        .args(["memory", "save", "--user", "u"])
        .arg(std::ffi::OsStr::from_bytes(b"caf\xe9"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("UTF-8"), "{}", stderr(&out));

    let big = "x".repeat(70_000);
    let out = run(d, &["memory", "save", "--user", "u", &big]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("max_text_bytes"), "{}", stderr(&out));

    assert_eq!(
        json(d, &["memory", "notes", "--user", "u"]),
        Value::Array(vec![])
    );
}

#[test]
fn config_is_checked_with_the_key_named() {
    let dir = TempDir::new().unwrap();
    let d = dir.path();
    let good = d.join("good.toml");
    std::fs::write(
        &good,
        "[search]\nvector_weight = 0.6\nkeyword_weight = 0.4\n",
    )
    .unwrap();
    let out = run(d, &["config", "check", good.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));

    for (text, key) in [
        ("[search]\nvector_wieght = 0.6\n", "vector_wieght"),
        ("[memory]\nchunk_chars = 10\n", "memory.chunk_chars"),
        ("[database]\npath = 5\n", "path"),
        ("[nonsense]\n", "nonsense"),
        (
            "[mcp_servers.files]\ncommand = \"mcp-files\"\napprove = [\"files/*\"]\n",
            "mcp_servers.files.approve",
        ),
    ] {
        let bad = d.join("bad.toml");
        std::fs::write(&bad, text).unwrap();
        let out = run(d, &["config", "check", bad.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(4), "{text}");
        assert!(stderr(&out).contains(key), "{text}: {}", stderr(&out));
        // The same file refuses to start anything else, and creates no database.
        let out = run(d, &["--config", bad.to_str().unwrap(), "db", "migrate"]);
        assert_eq!(out.status.code(), Some(4));
    }
    assert!(!d.join("cli.db").exists());

    // The shipped example configuration is valid.
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("config/nightshift.toml");
    let out = run(d, &["config", "check", example.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    // …and documents the defaults, not other values.
    let shipped = nightshift::config::Config::load(&example).unwrap();
    let defaults = nightshift::config::Config::default();
    assert_eq!(shipped, defaults);
    // …and names every key the configuration has.
    let text = std::fs::read_to_string(&example).unwrap();
    let keys = toml::to_string(&defaults).unwrap();
    let mut section = String::new();
    for line in keys.lines() {
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = name.to_string();
            // Tables of named entries are shown by an example entry.
            let shown =
                text.contains(&format!("[{section}]")) || text.contains(&format!("[{section}."));
            assert!(shown, "[{section}] is not in the example");
        } else if line == "schedules = []" {
            assert!(
                text.contains("[[schedules]]"),
                "[[schedules]] is not in the example"
            );
        } else if let Some((key, _)) = line.split_once(" = ") {
            let documented = text.lines().any(|l| {
                let l = l.trim_start_matches(['#', ' ']);
                l.starts_with(&format!("{key} =")) || l.starts_with(&format!("{key}="))
            });
            assert!(
                documented,
                "[{section}] {key} is not in config/nightshift.toml"
            );
        }
    }
}

#[test]
fn db_migrate_and_status() {
    let dir = TempDir::new().unwrap();
    let d = dir.path();
    let status = json(d, &["db", "status"]);
    assert_eq!(status["up_to_date"], false);
    let migrated = json(d, &["db", "migrate"]);
    assert!(migrated["applied"].as_u64().unwrap() >= 1);
    assert_eq!(json(d, &["db", "migrate"])["applied"], 0);
    let status = json(d, &["db", "status"]);
    assert_eq!(status["up_to_date"], true);
    assert_eq!(status["counts"]["notes"], 0);

    let out = run(d, &["--db", "ftp://example.invalid/db", "db", "status"]);
    assert_eq!(out.status.code(), Some(4));
    assert!(stderr(&out).contains("ftp://"), "{}", stderr(&out));
}

#[test]
fn index_rebuild_reports_what_it_rebuilt() {
    let dir = TempDir::new().unwrap();
    let d = dir.path();
    json(d, &["memory", "save", "--user", "u", "one note"]);
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
            "one event",
        ],
    );
    let report = json(d, &["index", "rebuild"]);
    assert_eq!(report["notes"], 1);
    assert_eq!(report["events"], 1);
    assert_eq!(
        json(d, &["memory", "search", "--user", "u", "note"])["hits"][0]["text"],
        "one note"
    );
}

#[test]
fn run_migrates_the_default_database_and_exits_zero_on_sigterm() {
    let dir = TempDir::new().unwrap();
    let d = dir.path();
    let mut child = Command::new(env!("CARGO_BIN_EXE_nightshift"))
        .env("NIGHTSHIFT_LISTEN", "127.0.0.1:0")
        .current_dir(d)
        .env_remove("NIGHTSHIFT_DB")
        .env_remove("NIGHTSHIFT_CONFIG")
        .arg("run")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait for the log line that says it is up (bounded: the child reports or dies).
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    loop {
        line.clear();
        let n = std::io::BufRead::read_line(&mut stderr, &mut line).unwrap();
        assert!(n > 0, "nightshift run exited before it was running");
        if line.contains("nightshift is running") {
            break;
        }
    }
    assert!(
        d.join("data/nightshift.db").exists(),
        "default database created"
    );
    assert_eq!(common::terminate(&mut child).code(), Some(0));
}

#[test]
fn outbox_commands() {
    let dir = TempDir::new().unwrap();
    let d = dir.path();
    assert_eq!(json(d, &["outbox", "list"]), Value::Array(vec![]));
    assert_eq!(
        json(d, &["outbox", "list", "--status", "dead"]),
        Value::Array(vec![])
    );
    let out = run(d, &["outbox", "list", "--status", "lost"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("lost"), "{}", stderr(&out));
    let out = run(d, &["outbox", "retry", "msg-nope"]);
    assert_eq!(out.status.code(), Some(3));
}

#[test]
fn schedule_commands_through_the_cli() {
    let dir = TempDir::new().unwrap();
    let d = dir.path();
    let added = json(
        d,
        &[
            "schedule",
            "add",
            "--user",
            "u",
            "--goal",
            "check mail",
            "--cron",
            "0 9 * * 1-5",
            "--tz",
            "America/New_York",
            "--name",
            "mail",
        ],
    );
    let id = added["schedule_id"].as_str().unwrap().to_string();
    assert!(id.starts_with("sch-"));
    let next = added["next_run_at"].as_str().unwrap();
    assert!(
        next.ends_with("-05:00") || next.ends_with("-04:00"),
        "shown in the schedule's zone: {next}"
    );
    let shown = json(d, &["schedule", "show", &id]);
    assert_eq!(shown["next_runs"].as_array().unwrap().len(), 5);
    assert_eq!(shown["timezone"], "America/New_York");
    assert_eq!(json(d, &["schedule", "pause", &id])["status"], "paused");
    assert_eq!(
        json(d, &["schedule", "list", "--status", "paused"])["schedules"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert_eq!(json(d, &["schedule", "resume", &id])["status"], "active");
    assert_eq!(json(d, &["schedule", "runs", &id]), Value::Array(vec![]));
    json(d, &["schedule", "delete", &id]);
    assert_eq!(run(d, &["schedule", "show", &id]).status.code(), Some(3));

    for (args, needle) in [
        (vec!["--cron", "0 9 * * 9"], "day-of-week"),
        (
            vec!["--cron", "0 9 * * *", "--tz", "Nowhere/City"],
            "Nowhere/City",
        ),
        (vec!["--every", "5s"], "minimum"),
        (vec!["--at", "2001-01-01T00:00:00Z"], "past"),
        (vec!["--when", "once in a blue moon"], "blue moon"),
    ] {
        let mut all = vec!["schedule", "add", "--user", "u", "--goal", "g"];
        all.extend(args.iter().copied());
        let out = run(d, &all);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(stderr(&out).contains(needle), "{args:?}: {}", stderr(&out));
    }
    let out = run(
        d,
        &[
            "schedule", "add", "--user", "u", "--goal", "  ", "--every", "1h",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        json(d, &["schedule", "list"])["schedules"],
        Value::Array(vec![])
    );
    assert_eq!(json(d, &["schedule", "list"])["total"], 0);
}

#[test]
fn schedule_add_dry_run_shows_the_understanding_and_creates_nothing_and_edit_keeps_the_id() {
    let dir = TempDir::new().unwrap();
    let d = dir.path();
    let add = [
        "schedule",
        "add",
        "--user",
        "u",
        "--goal",
        "check mail",
        "--when",
        "every weekday at 9am",
        "--tz",
        "Europe/Lisbon",
    ];
    let mut dry = add.to_vec();
    dry.push("--dry-run");
    let preview = json(d, &dry);
    assert_eq!(
        preview["description"],
        "at 09:00 on Monday to Friday (Europe/Lisbon)"
    );
    assert_eq!(preview["next_runs"].as_array().unwrap().len(), 5);
    assert_eq!(
        json(d, &["schedule", "list"])["total"],
        0,
        "nothing created"
    );
    let human = run(d, &dry);
    assert!(String::from_utf8_lossy(&human.stdout).contains("nothing was created"));
    // A bad schedule is refused by the dry run as by add.
    let out = run(
        d,
        &[
            "schedule",
            "add",
            "--user",
            "u",
            "--goal",
            "g",
            "--cron",
            "61 * * * *",
            "--dry-run",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("minute"), "{}", stderr(&out));

    let added = json(d, &add);
    let id = added["schedule_id"].as_str().unwrap();
    let edited = json(
        d,
        &[
            "schedule",
            "edit",
            id,
            "--goal",
            "check all mail",
            "--cron",
            "30 8 * * *",
        ],
    );
    assert_eq!(edited["schedule_id"], id);
    assert_eq!(edited["goal"], "check all mail");
    assert_eq!(edited["timezone"], "Europe/Lisbon", "the zone stays");
    assert_eq!(
        edited["cadence_text"],
        Value::Null,
        "the words no longer describe it"
    );
    let out = run(
        d,
        &[
            "schedule",
            "edit",
            id,
            "--user",
            "someone-else",
            "--goal",
            "x",
        ],
    );
    assert_eq!(out.status.code(), Some(3));
    let out = run(d, &["schedule", "edit", id]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(json(d, &["schedule", "show", id])["goal"], "check all mail");
}

/// `--approve` (and `--tool`) on add and edit, `--clear approve`, and a malformed
/// pattern refused naming `approve` with nothing changed.
#[test]
fn schedule_approval_patterns_through_the_cli() {
    let dir = TempDir::new().unwrap();
    let d = dir.path();
    let add = [
        "schedule",
        "add",
        "--user",
        "u",
        "--goal",
        "tidy the files",
        "--every",
        "1h",
        "--tool",
        "files__*",
        "--approve",
        "files__write_*",
        "--approve",
        "!files__write_draft",
    ];
    let added = json(d, &add);
    let id = added["schedule_id"].as_str().unwrap();
    let patterns = serde_json::json!(["files__write_*", "!files__write_draft"]);
    assert_eq!(added["approve"], patterns);
    assert_eq!(added["tools"], serde_json::json!(["files__*"]));
    assert_eq!(json(d, &["schedule", "show", id])["approve"], patterns);

    let mut bad = add.to_vec();
    bad.extend(["--approve", "files/*"]);
    let out = run(d, &bad);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("approve"), "{}", stderr(&out));
    for edit in [
        &["--approve", "a b"][..],
        &["--approve", "*", "--clear", "approve"],
    ] {
        let mut args = vec!["schedule", "edit", id];
        args.extend_from_slice(edit);
        let out = run(d, &args);
        assert_eq!(out.status.code(), Some(2), "{edit:?}");
        assert!(
            stderr(&out).contains("approve"),
            "{edit:?}: {}",
            stderr(&out)
        );
    }
    assert_eq!(json(d, &["schedule", "list"])["total"], 1);
    assert_eq!(json(d, &["schedule", "show", id])["approve"], patterns);

    let edited = json(d, &["schedule", "edit", id, "--approve", "memory_delete"]);
    assert_eq!(edited["approve"], serde_json::json!(["memory_delete"]));
    assert_eq!(
        edited["tools"],
        serde_json::json!(["files__*"]),
        "tools kept"
    );
    let cleared = json(d, &["schedule", "edit", id, "--clear", "approve"]);
    assert!(cleared.get("approve").is_none(), "{cleared}");
    assert_eq!(
        cleared["tools"],
        serde_json::json!(["files__*"]),
        "tools kept"
    );
}

#[test]
fn summary_context_and_consolidate_through_the_cli() {
    let dir = TempDir::new().unwrap();
    let d = dir.path();
    let file = d.join("chat.jsonl");
    let mut lines = String::new();
    for i in 0..40 {
        let role = if i % 2 == 0 { "user" } else { "assistant" };
        lines.push_str(&format!(
            "{{\"role\":\"{role}\",\"content\":\"turn {i} {}\"}}\n",
            "blah ".repeat(60)
        ));
    }
    lines.push_str("{\"role\":\"user\",\"content\":\"I prefer aisle seats on trains\"}\n");
    std::fs::write(&file, lines).unwrap();
    json(
        d,
        &[
            "memory",
            "append",
            "--user",
            "u",
            "--session",
            "chat",
            "--file",
            file.to_str().unwrap(),
        ],
    );

    let reports = json(
        d,
        &["consolidate", "--pass", "summaries", "--pass", "facts"],
    );
    let reports = reports.as_array().unwrap();
    assert_eq!(reports.len(), 2);
    assert!(
        reports.iter().all(|r| r["status"] == "succeeded"),
        "{reports:?}"
    );
    assert_eq!(reports[1]["counts"]["facts_saved"], 1);
    let summary = json(d, &["memory", "summary", "--session", "chat"]);
    assert_eq!(summary["epoch"], 1);
    assert!(summary["summary"].as_str().unwrap().contains("user: turn"));

    let context = json(
        d,
        &[
            "memory",
            "context",
            "--user",
            "u",
            "--session",
            "chat",
            "--budget",
            "300",
        ],
    );
    assert!(context["used_tokens"].as_u64().unwrap() <= 300);
    let out = run(
        d,
        &["memory", "context", "--user", "other", "--session", "chat"],
    );
    assert_eq!(out.status.code(), Some(3));
    let out = run(
        d,
        &[
            "memory",
            "context",
            "--user",
            "u",
            "--session",
            "chat",
            "--strategy",
            "everything",
        ],
    );
    assert_eq!(out.status.code(), Some(2));

    let status = json(d, &["consolidate", "--status"]);
    assert_eq!(status.as_array().unwrap().len(), 2);
    let out = run(d, &["consolidate", "--pass", "defrag"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("defrag"));
}

#[test]
fn db_status_reports_the_embedding_queue_and_the_daemon_re_embeds_after_a_model_change() {
    let dir = TempDir::new().unwrap();
    let d = dir.path();
    json(d, &["memory", "save", "--user", "u", "the harbour at dawn"]);
    let status = json(d, &["db", "status"]);
    assert_eq!(status["embedding"]["backend"], "hash");
    // A CLI write embeds what it queued before it exits.
    assert_eq!(status["embedding"]["pending"], 0);
    assert_eq!(status["embedding"]["reembedding"], false);
    assert_eq!(status["counts"]["vectors"], 1);

    // Another model: the CLI searches by keywords and says so until the daemon adopts it.
    let config = d.join("nightshift.toml");
    std::fs::write(&config, "[embedding]\ndimensions = 128\n").unwrap();
    let cfg = config.to_str().unwrap();
    let found = json(
        d,
        &[
            "--config", cfg, "memory", "search", "--user", "u", "harbour",
        ],
    );
    assert_eq!(found["degraded"], true);
    assert_eq!(found["hits"].as_array().unwrap().len(), 1);

    let mut child = nightshift(d)
        .args(["--config", cfg, "run"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Bounded poll of what the daemon reports, not of the clock.
    let mut adopted = false;
    for _ in 0..600 {
        let status = json(d, &["--config", cfg, "db", "status"]);
        if status["embedding_model"] == "hash-v1-128"
            && status["embedding"]["pending"] == 0
            && status["embedding"]["reembedding"] == false
        {
            adopted = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(common::terminate(&mut child).code(), Some(0));
    assert!(adopted, "the daemon did not re-embed for the new model");
    let found = json(
        d,
        &[
            "--config", cfg, "memory", "search", "--user", "u", "harbour",
        ],
    );
    assert_eq!(found["degraded"], false);
}

#[test]
fn an_unreadable_database_token_file_is_a_configuration_error() {
    let dir = TempDir::new().unwrap();
    let d = dir.path();
    let config = d.join("nightshift.toml");
    std::fs::write(&config, "[database]\nauth_token_file = \"no-such-token\"\n").unwrap();
    let out = nightshift(d)
        .env("NIGHTSHIFT_DB", "http://127.0.0.1:9")
        .env_remove("NIGHTSHIFT_DB_AUTH_TOKEN")
        .env("CREDENTIALS_DIRECTORY", d.join("creds"))
        .args(["--config", config.to_str().unwrap(), "db", "status"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&d.join("creds/no-such-token").display().to_string()),
        "{}",
        stderr(&out)
    );
}

/// `docs/cli.md` is the command line's own help; regenerate it with
/// `nightshift generate cli-doc docs/cli.md` when a command changes.
#[test]
fn the_cli_reference_is_up_to_date() {
    let dir = TempDir::new().unwrap();
    let fresh = dir.path().join("cli.md");
    let out = run(
        dir.path(),
        &["generate", "cli-doc", fresh.to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let committed =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/cli.md")).unwrap();
    assert!(
        std::fs::read_to_string(fresh).unwrap() == committed,
        "docs/cli.md is out of date: run `nightshift generate cli-doc docs/cli.md`"
    );
}

/// `import -` reads an archive from standard input (kept whole first: an import reads its
/// input twice), and `--user` is refused for an archive, whose lines name their users.
#[test]
fn import_reads_an_archive_from_standard_input() {
    use std::io::Write as _;
    let source = TempDir::new().unwrap();
    json(
        source.path(),
        &["memory", "save", "--user", "alice", "piped tea note"],
    );
    let archive = run(source.path(), &["export", "--user", "alice"]);
    assert!(archive.status.success(), "{}", stderr(&archive));

    let target = TempDir::new().unwrap();
    let mut child = nightshift(target.path())
        .args(["--json", "import", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(&archive.stdout)
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["types"]["note"]["imported"], 1);
    let found = json(
        target.path(),
        &["memory", "search", "--user", "alice", "piped tea"],
    );
    assert!(found.to_string().contains("piped tea note"), "{found}");

    let file = target.path().join("alice.ndjson");
    std::fs::write(&file, &archive.stdout).unwrap();
    let out = run(
        target.path(),
        &["import", file.to_str().unwrap(), "--user", "bob"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("user"), "{}", stderr(&out));
}

/// A stderr that cannot be written (a log file on a full disk: /dev/full) loses the log
/// and the error line, never the exit code: a command that succeeds exits 0 and one that
/// fails keeps its own code, never 101 (the hardening report's D14).
#[test]
fn a_full_stderr_changes_no_exit_code() {
    let dir = TempDir::new().unwrap();
    let full = || {
        std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap()
    };
    let saved = nightshift(dir.path())
        .env("NIGHTSHIFT_LOG", "trace")
        .args([
            "memory",
            "save",
            "--user",
            "alice",
            "a note while the disk is full",
        ])
        .stdout(Stdio::null())
        .stderr(full())
        .status()
        .unwrap();
    assert_eq!(saved.code(), Some(0));
    let missing = nightshift(dir.path())
        .env("NIGHTSHIFT_LOG", "trace")
        .args(["schedule", "show", "sch-missing"])
        .stdout(Stdio::null())
        .stderr(full())
        .status()
        .unwrap();
    assert_eq!(missing.code(), Some(3), "not found keeps its code");
    let bad = nightshift(dir.path())
        .args(["memory", "save", "--user", "", "text"])
        .stdout(Stdio::null())
        .stderr(full())
        .status()
        .unwrap();
    assert_eq!(bad.code(), Some(2), "bad input keeps its code");
}

/// Writes a waiting run of `schedule_id` and its approval, as a run paused on a call
/// leaves them, into the CLI's database.
fn waiting_approval(d: &Path, schedule_id: &str, user: &str, approval_id: &str) {
    let db = d.join("cli.db");
    let (schedule_id, user, approval_id) = (
        schedule_id.to_string(),
        user.to_string(),
        approval_id.to_string(),
    );
    tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(async move {
            let conn = libsql::Builder::new_local(db)
                .build()
                .await
                .unwrap()
                .connect()
                .unwrap();
            let run_id = format!("run-{approval_id}");
            conn.execute(
                "INSERT INTO schedule_runs (run_id, schedule_id, scheduled_for, status)
             VALUES (?1, ?2, (SELECT count(*) + 1 FROM schedule_runs), 'waiting')",
                [run_id.as_str(), schedule_id.as_str()],
            )
            .await
            .unwrap();
            conn.execute(
                "INSERT INTO approvals (approval_id, run_id, schedule_id, user_id, tool_name,
             arguments, created_at, expires_at)
             VALUES (?1, ?2, ?3, ?4, 'files__write_file', '{\"path\":\"a\"}', 1, 9999999999999)",
                [
                    approval_id.as_str(),
                    run_id.as_str(),
                    schedule_id.as_str(),
                    user.as_str(),
                ],
            )
            .await
            .unwrap();
        });
}

#[test]
fn approvals_through_the_cli() {
    let dir = TempDir::new().unwrap();
    let d = dir.path();
    assert_eq!(json(d, &["approvals", "list"]), serde_json::json!([]));
    let out = run(d, &["approvals", "list", "--state", "maybe"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--state"), "{}", stderr(&out));
    let out = run(d, &["approvals", "list", "--limit", "0"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("limit"), "{}", stderr(&out));
    let out = run(d, &["approvals", "approve", "apr-missing"]);
    assert_eq!(out.status.code(), Some(3));

    let added = json(
        d,
        &[
            "schedule", "add", "--user", "ana", "--goal", "tidy", "--every", "1h",
        ],
    );
    let schedule_id = added["schedule_id"].as_str().unwrap();
    waiting_approval(d, schedule_id, "ana", "apr-1");
    waiting_approval(d, schedule_id, "ana", "apr-2");

    let listed = json(
        d,
        &["approvals", "list", "--user", "ana", "--state", "pending"],
    );
    assert_eq!(listed.as_array().unwrap().len(), 2);
    assert_eq!(
        json(d, &["approvals", "list", "--user", "bob"]),
        serde_json::json!([])
    );
    // Another user's approval answers as a missing one, and is not changed.
    let bobs = run(d, &["approvals", "approve", "apr-1", "--user", "bob"]);
    let missing = run(d, &["approvals", "approve", "apr-9", "--user", "bob"]);
    assert_eq!(bobs.status.code(), Some(3));
    assert_eq!(
        stderr(&bobs).replace("apr-1", "X"),
        stderr(&missing).replace("apr-9", "X")
    );
    // A reason over the limit is refused, naming it, and answers nothing.
    let long = "x".repeat(2001);
    let out = run(d, &["approvals", "deny", "apr-1", "--reason", &long]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("reason"), "{}", stderr(&out));
    assert_eq!(json(d, &["approvals", "show", "apr-1"])["state"], "pending");

    let approved = json(
        d,
        &[
            "approvals",
            "approve",
            "apr-1",
            "--user",
            "ana",
            "--reason",
            "fine",
        ],
    );
    assert_eq!(approved["state"], "approved");
    assert_eq!(approved["decided_by"], "cli");
    assert_eq!(approved["reason"], "fine");
    let again = run(d, &["approvals", "deny", "apr-1"]);
    assert_eq!(again.status.code(), Some(5));
    assert!(
        stderr(&again).contains("already answered: approved (cli)"),
        "{}",
        stderr(&again)
    );
    let text = run(d, &["approvals", "deny", "apr-2"]);
    assert!(text.status.success(), "{}", stderr(&text));
    assert!(String::from_utf8_lossy(&text.stdout).contains("apr-2 denied"));
}

/// Exit 1 is a database (or server) out of reach, from every command family: a libSQL
/// server URL where nothing listens.
#[test]
fn a_database_out_of_reach_is_exit_1_from_every_command_family() {
    let dir = TempDir::new().unwrap();
    let d = dir.path();
    let archive = d.join("archive.ndjson");
    std::fs::write(&archive, "").unwrap();
    let archive = archive.to_str().unwrap();
    for args in [
        &["memory", "search", "--user", "a", "plants"][..],
        &["memory", "save", "--user", "a", "a note"],
        &["index", "rebuild"],
        &["state", "get", "--user", "a", "user:tz"],
        &["artifact", "list", "--user", "a", "--session", "s"],
        &["export", "--user", "a"],
        &["import", archive],
        &["schedule", "list"],
        &[
            "schedule", "add", "--user", "a", "--goal", "g", "--every", "1h",
        ],
        &["approvals", "list"],
        &["approvals", "approve", "apr-1"],
        &["macros", "list", "--user", "a"],
        &["consolidate", "--status"],
        &["status"],
        &["workers"],
        &["outbox", "list"],
        &["db", "status"],
        &["token", "list"],
    ] {
        let out = nightshift(d)
            .arg("--db")
            .arg("http://127.0.0.1:1")
            .args(args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("http://127.0.0.1:1"),
            "{args:?} names the database: {}",
            stderr(&out)
        );
    }
}

#[test]
fn schedule_cancel_stops_a_waiting_run_once() {
    let dir = TempDir::new().unwrap();
    let d = dir.path();
    let added = json(
        d,
        &[
            "schedule", "add", "--user", "ana", "--goal", "tidy", "--every", "1h",
        ],
    );
    let schedule_id = added["schedule_id"].as_str().unwrap();
    waiting_approval(d, schedule_id, "ana", "apr-c");
    let bobs = run(d, &["schedule", "cancel", "run-apr-c", "--user", "bob"]);
    assert_eq!(bobs.status.code(), Some(3), "{}", stderr(&bobs));
    let cancelled = json(d, &["schedule", "cancel", "run-apr-c", "--user", "ana"]);
    assert_eq!(cancelled["status"], "cancelled");
    assert_eq!(cancelled["cancel_requested_by"], "cli");
    assert_eq!(
        json(d, &["approvals", "show", "apr-c"])["decided_by"],
        "cancel"
    );
    let again = run(d, &["schedule", "cancel", "run-apr-c"]);
    assert_eq!(again.status.code(), Some(5));
    assert!(
        stderr(&again).contains("already ended as cancelled"),
        "{}",
        stderr(&again)
    );
    let missing = run(d, &["schedule", "cancel", "run-nope"]);
    assert_eq!(missing.status.code(), Some(3));
}

/// A schedule of `user` with a run that ended as `status`, with two progress events,
/// written through the library into the CLI's database; the run's id.
fn a_run_with_progress(dir: &Path, user: &str, status: &str) -> String {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        use nightshift::access::Actor;
        use nightshift::schedule::progress::ProgressKind;
        let mut config = nightshift::config::Config::default();
        config.database.path = dir.join("cli.db").display().to_string();
        let app = nightshift::app::App::open(&config).await.unwrap();
        let schedule = app
            .schedules()
            .create(
                &Actor::Operator,
                &nightshift::schedule::types::NewSchedule::new(
                    user,
                    "water the plants",
                    nightshift::schedule::Cadence::Triggered { tz: "UTC".into() },
                ),
            )
            .await
            .unwrap();
        let run_id = format!("run-{user}-{status}");
        let conn = app.db().conn().await.unwrap();
        conn.execute(
            "INSERT INTO schedule_runs (run_id, schedule_id, scheduled_for, status, started_at)
             VALUES (?1, ?2, 1800000000000, 'running', 1800000000000)",
            libsql::params![run_id.as_str(), schedule.schedule_id.as_str()],
        )
        .await
        .unwrap();
        let store = app.schedules();
        store
            .record_progress(
                &run_id,
                ProgressKind::Status,
                &serde_json::json!({"status": "running", "attempt": 1}),
            )
            .await
            .unwrap();
        store
            .record_progress(
                &run_id,
                ProgressKind::ToolCall,
                &serde_json::json!({"name": "memory_search", "arguments": "{}"}),
            )
            .await
            .unwrap();
        conn.execute(
            "UPDATE schedule_runs SET status = ?2, finished_at = 1800000001000, error = 'it broke'
             WHERE run_id = ?1",
            libsql::params![run_id.as_str(), status],
        )
        .await
        .unwrap();
        run_id
    })
}

#[test]
fn runs_are_listed_across_schedules_and_followed_to_their_end() {
    let dir = TempDir::new().unwrap();
    let d = dir.path();
    let failed = a_run_with_progress(d, "ana", "failed");
    let fine = a_run_with_progress(d, "bob", "succeeded");

    let all = json(d, &["schedule", "runs"]);
    assert_eq!(all.as_array().unwrap().len(), 2, "{all}");
    let what_failed = json(
        d,
        &[
            "schedule",
            "runs",
            "--status",
            "failed",
            "--since",
            "2027-01-15",
        ],
    );
    let ids: Vec<&str> = what_failed
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["run_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [failed.as_str()]);
    // A user sees their own alone.
    let bobs = json(
        d,
        &["schedule", "runs", "--user", "bob", "--status", "failed"],
    );
    assert_eq!(bobs, Value::Array(vec![]));

    // Its story, then its end, a JSON object a line.
    let out = run(d, &["--json", "schedule", "follow", &failed]);
    assert!(out.status.success(), "{}", stderr(&out));
    let events: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let kinds: Vec<&str> = events.iter().map(|e| e["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["status", "tool_call", "end"]);
    assert_eq!(events[2]["seq"], 3);
    assert_eq!(events[2]["data"]["error"], "it broke");
    // In words, after the first event.
    let out = run(d, &["schedule", "follow", &failed, "--after", "1"]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        text.contains("memory_search({})") && text.contains("ended failed: it broke"),
        "{text}"
    );
    assert!(!text.contains("running (attempt 1)"), "{text}");
    // Past its end there is nothing more: a quiet success.
    let out = run(d, &["schedule", "follow", &failed, "--after", "3"]);
    assert!(out.status.success() && out.stdout.is_empty());

    // Bad input and other users' runs.
    let out = run(d, &["schedule", "follow", &failed, "--after=-2"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--after"), "{}", stderr(&out));
    let out = run(d, &["schedule", "follow", &fine, "--user", "ana"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let out = run(d, &["schedule", "runs", "--status", "exploded"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("status"), "{}", stderr(&out));
    let out = run(
        d,
        &["schedule", "runs", "sch-missing", "--status", "failed"],
    );
    assert_eq!(out.status.code(), Some(3));
}
