//! Schema migrations: from empty, idempotent, refusing newer or altered schemas.

mod common;

use common::config_in;
use nightshift::app::{open_db, open_memory, AppError};
use nightshift::db::migrate::{self, latest_version};
use nightshift::db::{query_scalar, DbError};
use tempfile::TempDir;

/// The migrations of the engine the suite runs on.
fn migrations() -> &'static [migrate::Migration] {
    if common::postgres::engine_is_postgres() {
        migrate::POSTGRES_MIGRATIONS
    } else {
        migrate::MIGRATIONS
    }
}

/// An upgrade from an older libSQL schema: PostgreSQL's starts at the latest one.
fn skip_an_upgrade_on_postgres() -> bool {
    if common::postgres::engine_is_postgres() {
        common::skip::skipped(
            "upgrades a libSQL schema older than PostgreSQL's first (version 33)",
        );
        true
    } else {
        false
    }
}

#[tokio::test]
async fn migrates_from_empty_then_does_nothing() {
    let dir = TempDir::new().unwrap();
    let config = config_in(&dir);
    let db = open_db(&config).await.unwrap();
    let before = migrate::status(&db).await.unwrap();
    assert!(before.iter().all(|m| m.applied_at.is_none()));
    assert!(matches!(
        migrate::ensure_current(&db).await,
        Err(DbError::NotMigrated(_))
    ));

    assert_eq!(migrate::migrate(&db).await.unwrap(), migrations().len());
    assert_eq!(migrate::migrate(&db).await.unwrap(), 0);
    migrate::ensure_current(&db).await.unwrap();
    let after = migrate::status(&db).await.unwrap();
    assert!(after.iter().all(|m| m.applied_at.is_some()));
    if db.is_postgres() {
        return;
    }

    let conn = db.conn().await.unwrap();
    let mode: String = query_scalar(&conn, "PRAGMA journal_mode", ())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(mode, "wal");
    let fk: i64 = query_scalar(&conn, "PRAGMA foreign_keys", ())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(fk, 1);
}

#[tokio::test]
async fn creates_the_database_folder() {
    let dir = TempDir::new().unwrap();
    let mut config = config_in(&dir);
    config.database.path = dir
        .path()
        .join("deep/er/nightshift.db")
        .display()
        .to_string();
    open_memory(&config).await.unwrap();
    assert!(dir.path().join("deep/er/nightshift.db").exists());
}

#[tokio::test]
async fn refuses_a_database_from_a_newer_nightshift() {
    let dir = TempDir::new().unwrap();
    let config = config_in(&dir);
    let db = open_db(&config).await.unwrap();
    migrate::migrate(&db).await.unwrap();
    let conn = db.conn().await.unwrap();
    conn.execute(
        "INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES (?1, 'future', 'x', 0)",
        [latest_version() + 1],
    )
    .await
    .unwrap();
    drop(conn);
    let err = migrate::migrate(&db).await.unwrap_err();
    assert!(matches!(err, DbError::SchemaTooNew { .. }), "{err}");
    assert!(err.to_string().contains("newer"), "{err}");
    assert!(matches!(
        open_memory(&config).await,
        Err(AppError::Db(DbError::SchemaTooNew { .. }))
    ));
    assert!(migrate::status(&db).await.is_err());
}

#[tokio::test]
async fn refuses_a_migration_applied_with_different_contents() {
    let dir = TempDir::new().unwrap();
    let config = config_in(&dir);
    let db = open_db(&config).await.unwrap();
    migrate::migrate(&db).await.unwrap();
    let conn = db.conn().await.unwrap();
    conn.execute(
        "UPDATE schema_migrations SET checksum = 'tampered' WHERE version = ?1",
        [latest_version()],
    )
    .await
    .unwrap();
    drop(conn);
    let err = migrate::migrate(&db).await.unwrap_err();
    assert!(
        matches!(err, DbError::ChecksumMismatch { version, .. } if version == latest_version()),
        "{err}"
    );
}

#[tokio::test]
async fn concurrent_migrators_apply_each_migration_once() {
    let dir = TempDir::new().unwrap();
    let config = config_in(&dir);
    let mut tasks = Vec::new();
    for _ in 0..4 {
        let config = config.clone();
        tasks.push(tokio::spawn(async move {
            let db = open_db(&config).await.unwrap();
            migrate::migrate(&db).await.unwrap()
        }));
    }
    let mut total = 0;
    for t in tasks {
        total += t.await.unwrap();
    }
    assert_eq!(total, migrations().len());
}

#[tokio::test]
async fn rebuilding_the_schedules_table_keeps_schedules_runs_cascade_and_triggers() {
    if skip_an_upgrade_on_postgres() {
        return;
    }
    let dir = TempDir::new().unwrap();
    let db = open_db(&config_in(&dir)).await.unwrap();
    migrate::migrate_to(&db, 11).await.unwrap();
    let conn = db.conn().await.unwrap();
    conn.execute(
        "INSERT INTO schedules (schedule_id, user_id, goal, cadence_json, overlap, created_at,
         updated_at, next_run_at, max_runs, runs_started, jitter_secs, next_nominal_at)
         VALUES ('sch-1', 'alice', 'g', '{\"kind\":\"once\",\"at\":5}', 'buffer_one', 1, 2, 5,
         3, 1, 60, 4)",
        (),
    )
    .await
    .unwrap();
    conn.execute(
        "INSERT INTO schedule_runs (run_id, schedule_id, scheduled_for, status, output, due_at)
         VALUES ('run-1', 'sch-1', 4, 'succeeded', 'done', 7)",
        (),
    )
    .await
    .unwrap();
    drop(conn);
    assert_eq!(
        migrate::migrate(&db).await.unwrap() as i64,
        latest_version() - 11
    );

    let conn = db.conn().await.unwrap();
    let kept: String = query_scalar(
        &conn,
        "SELECT overlap || max_runs || runs_started || jitter_secs || next_nominal_at
         FROM schedules WHERE schedule_id = 'sch-1'",
        (),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(kept, "buffer_one31604");
    let run: String = query_scalar(
        &conn,
        "SELECT output || due_at FROM schedule_runs WHERE run_id = 'run-1'",
        (),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(run, "done7");
    // The runs table, rebuilt again by 0014: a run kept is the cadence's, and an
    // occurrence still has one run at most (a triggered run beside it is another).
    let origin: String = query_scalar(
        &conn,
        "SELECT origin FROM schedule_runs WHERE run_id = 'run-1'",
        (),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(origin, "cadence");
    assert!(conn
        .execute(
            "INSERT INTO schedule_runs (run_id, schedule_id, scheduled_for, status)
             VALUES ('run-2', 'sch-1', 4, 'succeeded')",
            (),
        )
        .await
        .is_err());
    conn.execute(
        "INSERT INTO schedule_runs (run_id, schedule_id, scheduled_for, status, origin, event_id)
         VALUES ('run-3', 'sch-1', 4, 'succeeded', 'trigger', 'evt-1')",
        (),
    )
    .await
    .unwrap();
    // The new policies are accepted; the change counter still moves; deleting a schedule
    // still deletes its runs.
    let version = |conn| async move {
        query_scalar::<String>(
            conn,
            "SELECT value FROM meta WHERE key = 'schedules_version'",
            (),
        )
        .await
        .unwrap()
        .unwrap()
    };
    let before = version(&conn).await;
    conn.execute("UPDATE schedules SET overlap = 'cancel_other'", ())
        .await
        .unwrap();
    assert_ne!(version(&conn).await, before);
    conn.execute("DELETE FROM schedules WHERE schedule_id = 'sch-1'", ())
        .await
        .unwrap();
    let runs: i64 = query_scalar(&conn, "SELECT count(*) FROM schedule_runs", ())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(runs, 0);
}

/// An upgrade from the schema before the chunks lost their FTS5 table: the table and its
/// triggers go, stored keyword blocks are kept as blocks of words (field 0), and chunks
/// written before are found by the keyword index, stop words alone too, and can still be
/// deleted.
#[tokio::test]
async fn upgrading_drops_the_chunks_fts5_table_and_keeps_keyword_blocks() {
    if skip_an_upgrade_on_postgres() {
        return;
    }
    let dir = TempDir::new().unwrap();
    let config = config_in(&dir);
    let db = open_db(&config).await.unwrap();
    migrate::migrate_to(&db, 24).await.unwrap();
    let conn = db.conn().await.unwrap();
    for sql in [
        "INSERT INTO sessions (session_id, user_id, kind, created_at, updated_at, last_sequence)
         VALUES ('chat', 'u', 'conversation', 1, 1, 1)",
        "INSERT INTO events (session_id, sequence, role, content, importance, created_at)
         VALUES ('chat', 1, 'user', 'the copper lantern glows', 0.5, 1)",
        "INSERT INTO chunks (session_id, user_id, scope, text, content_hash, sequence_start,
                             sequence_end, created_at)
         VALUES ('chat', 'u', 's1', 'the copper lantern glows', 'h', 1, 1, 1)",
        // Not a block a packer writes: the chain ends there and the rows are read.
        "INSERT INTO keyword_blocks (session_id, after_chunk_id, last_chunk_id, removals,
                                     format, row_count, postings)
         VALUES ('chat', 0, 1, 0, 1, 1, x'00')",
    ] {
        conn.execute(sql, ()).await.unwrap();
    }
    drop(conn);
    migrate::migrate(&db).await.unwrap();
    let conn = db.conn().await.unwrap();
    assert_eq!(
        scalar_of(
            &conn,
            "SELECT count(*) FROM sqlite_master WHERE name LIKE 'chunks_fts%'"
        )
        .await,
        0
    );
    assert_eq!(
        scalar_of(
            &conn,
            "SELECT count(*) FROM keyword_blocks WHERE field = 0 AND format = 1"
        )
        .await,
        1
    );
    drop(conn);

    let memory = open_memory(&config).await.unwrap();
    for query in ["lanterns", "the"] {
        let chat = nightshift::memory::SessionKey::new("u", "chat");
        let hits = memory.keyword_leg(&chat, query, 5).await.unwrap().unwrap();
        assert_eq!(hits.len(), 1, "{query:?}");
    }
    memory
        .forget(&nightshift::access::Actor::Operator, "chat")
        .await
        .unwrap();
    let conn = db.conn().await.unwrap();
    assert_eq!(scalar_of(&conn, "SELECT count(*) FROM chunks").await, 0);
    assert_eq!(
        scalar_of(&conn, "SELECT count(*) FROM keyword_blocks").await,
        0
    );
}

async fn scalar_of(conn: &nightshift::db::Conn, sql: &str) -> i64 {
    query_scalar::<i64>(conn, sql, ()).await.unwrap().unwrap()
}

/// An upgrade from schema 27, when a session id was one for all users: every row naming
/// a session (events, summary, chunks and their vectors, index blocks, session state,
/// artifacts, the macro pass's cursors, the notes' pseudo-sessions) moves to the key of
/// the session's user, nothing is left under an old id, and every door then reads the
/// data as before; the same id is then free for another user, as a session of their own.
#[tokio::test]
async fn upgrading_moves_every_session_to_its_users_key() {
    if skip_an_upgrade_on_postgres() {
        return;
    }
    use nightshift::access::Actor;
    use nightshift::memory::{NewEvent, Role, SearchRequest};
    use nightshift::state::StateAccess;

    let dir = TempDir::new().unwrap();
    let config = config_in(&dir);
    let db = open_db(&config).await.unwrap();
    migrate::migrate_to(&db, 27).await.unwrap();
    let conn = db.conn().await.unwrap();
    for sql in [
        "INSERT INTO sessions (session_id, user_id, kind, title, created_at, updated_at,
                               last_sequence)
         VALUES ('chat', 'alice', 'conversation', 'Lanterns', 1, 5, 2),
                ('memory:alice', 'alice', 'memory', NULL, 1, 3, 1),
                ('scheduled:sch-b', 'bob', 'scheduled', NULL, 1, 4, 1),
                -- Squatted before the upgrade (D8, D11): carol's notes session and the
                -- transcripts of dave's schedule, taken by alice.
                ('memory:carol', 'alice', 'memory', NULL, 1, 1, 0),
                ('scheduled:sch-d', 'alice', 'scheduled', NULL, 1, 1, 0)",
        "UPDATE sessions SET vector_removals = 41",
        "INSERT INTO events (session_id, sequence, role, content, importance, created_at)
         VALUES ('chat', 1, 'user', 'the copper lantern glows', 0.5, 1),
                ('chat', 2, 'assistant', 'it does', 0.5, 2),
                ('scheduled:sch-b', 1, 'user', 'water the plants', 0.5, 1)",
        "INSERT INTO session_state (session_id, summary, summary_epoch, summary_upper_sequence,
                                    updated_at)
         VALUES ('chat', 'about a lantern', 1, 2, 5), ('memory:alice', NULL, 0, 0, 1),
                ('scheduled:sch-b', NULL, 0, 0, 1), ('memory:carol', NULL, 0, 0, 1),
                ('scheduled:sch-d', NULL, 0, 0, 1)",
        "INSERT INTO notes (note_id, user_id, content, created_at, updated_at)
         VALUES ('note-1', 'alice', 'alice keeps bees in Porto', 3, 3)",
        "INSERT INTO chunks (chunk_id, session_id, user_id, note_id, scope, text, content_hash,
                             sequence_start, sequence_end, created_at)
         VALUES (1, 'chat', 'alice', NULL, '', 'the copper lantern glows', 'h1', 1, 1, 1),
                (2, 'memory:alice', 'alice', 'note-1', '', 'alice keeps bees in Porto', 'h2',
                 1, 1, 3),
                (3, 'scheduled:sch-b', 'bob', NULL, '', 'water the plants', 'h3', 1, 1, 1)",
        "INSERT INTO chunk_vectors (chunk_id, session_id, model, embedding)
         VALUES (1, 'chat', 'old-model', x'0000803f')",
        "INSERT INTO vector_blocks (session_id, model, after_vector_id, last_vector_id, removals,
                                    dimensions, row_count, chunk_ids, steps, codes)
         VALUES ('chat', 'old-model', 0, 1, 41, 1, 1, x'', x'', x'')",
        "INSERT INTO keyword_blocks (session_id, field, after_chunk_id, last_chunk_id, removals,
                                     format, row_count, postings)
         VALUES ('chat', 0, 0, 1, 41, 0, 1, x'00')",
        "INSERT INTO state_entries (scope, scope_id, key, user_id, session_id, value_json,
                                    version, created_at, updated_at)
         VALUES ('session', 'chat', 'step', 'alice', 'chat', '3', 1, 1, 1),
                ('user', 'alice', 'user:theme', 'alice', NULL, '\"dark\"', 2, 1, 1)",
        "INSERT INTO artifact_contents (hash, size, in_folder, data, created_at)
         VALUES ('hash-1', 2, 0, x'6869', 1)",
        "INSERT INTO artifacts (artifact_id, user_id, session_id, name, mime_type, size, hash,
                                created_at)
         VALUES ('art-1', 'alice', 'chat', 'hi.txt', 'text/plain', 2, 'hash-1', 1)",
        "INSERT INTO macro_cursors (user_id, session_id, upper_sequence)
         VALUES ('bob', 'scheduled:sch-b', 1)",
    ] {
        conn.execute(sql, ()).await.unwrap();
    }
    drop(conn);
    migrate::migrate(&db).await.unwrap();

    let conn = db.conn().await.unwrap();
    // Nothing is left under an old id, and every reference holds.
    for (table, column, only) in [
        ("sessions", "session_id", "1"),
        ("events", "session_id", "1"),
        ("session_state", "session_id", "1"),
        ("chunks", "session_id", "1"),
        ("chunk_vectors", "session_id", "1"),
        ("vector_blocks", "session_id", "1"),
        ("keyword_blocks", "session_id", "1"),
        ("artifacts", "session_id", "1"),
        ("macro_cursors", "session_id", "1"),
        ("state_entries", "session_id", "scope = 'session'"),
        ("state_entries", "scope_id", "scope = 'session'"),
    ] {
        let all = scalar_of(&conn, &format!("SELECT count(*) FROM {table} WHERE {only}")).await;
        let keyed = scalar_of(
            &conn,
            &format!(
                "SELECT count(*) FROM {table} t WHERE {only} AND t.{column} =
                 (SELECT s.user_id FROM sessions s WHERE s.session_id = t.{column})
                 || char(31) || substr(t.{column}, instr(t.{column}, char(31)) + 1)"
            ),
        )
        .await;
        assert!(all > 0, "{table}");
        assert_eq!(keyed, all, "{table}.{column}");
    }
    assert_eq!(
        scalar_of(&conn, "SELECT count(*) FROM pragma_foreign_key_check").await,
        0
    );
    // The counter the stored blocks are checked against came along with them.
    assert_eq!(
        scalar_of(
            &conn,
            "SELECT count(*) FROM sessions s JOIN vector_blocks b ON b.session_id = s.session_id
             WHERE b.removals = s.vector_removals"
        )
        .await,
        1
    );
    drop(conn);

    let app = common::app_with(&config, None).await;
    let memory = app.memory();
    let (alice, bob) = (Actor::user("alice").unwrap(), Actor::user("bob").unwrap());
    let recalled = memory.recall(&alice, "chat", 10).await.unwrap();
    assert_eq!(
        recalled
            .iter()
            .map(|e| e.session_id.as_str())
            .collect::<Vec<_>>(),
        ["chat", "chat"]
    );
    assert_eq!(recalled[0].content, "the copper lantern glows");
    let sessions = memory.sessions("alice").await.unwrap();
    let listed: Vec<(&str, Option<&str>)> = sessions
        .iter()
        .map(|s| (s.session_id.as_str(), s.title.as_deref()))
        .collect();
    assert_eq!(
        listed,
        [("chat", Some("Lanterns")), ("scheduled:sch-d", None)],
        "most recently active first"
    );
    assert_eq!(
        memory.read_summary(&alice, "chat").await.unwrap().summary,
        Some("about a lantern".to_string())
    );
    assert_eq!(
        memory.recall(&bob, "scheduled:sch-b", 10).await.unwrap()[0].content,
        "water the plants"
    );
    let search = |user: &str, query: &str, session: Option<&str>| SearchRequest {
        user_id: user.into(),
        query: query.into(),
        session_id: session.map(str::to_string),
        ..Default::default()
    };
    let hits = memory
        .search(&search("alice", "copper lantern", Some("chat")))
        .await
        .unwrap();
    assert_eq!(hits[0].session_id.as_deref(), Some("chat"), "{hits:?}");
    let hits = memory.search(&search("alice", "bees", None)).await.unwrap();
    assert_eq!(hits[0].note_id.as_deref(), Some("note-1"), "{hits:?}");
    let step = app
        .state()
        .get(&StateAccess::user("alice", Some("chat".into())), "step")
        .await
        .unwrap();
    assert_eq!(step.value, serde_json::json!(3));
    let files = app
        .artifacts()
        .list(&alice, "alice", Some("chat"))
        .await
        .unwrap();
    assert_eq!(files.len(), 1);
    assert_eq!(files[0].session_id, "chat");

    // What was squatted is alice's own now: carol saves her notes, dave's runs would
    // write their transcripts in dave's session.
    memory
        .save_note(
            "carol",
            &nightshift::memory::NewNote::new("carol's first note"),
        )
        .await
        .unwrap();
    memory
        .append_transcript(
            "dave",
            "scheduled:sch-d",
            &[NewEvent::new(Role::User, "go")],
        )
        .await
        .unwrap();
    assert_eq!(
        memory
            .recall(&alice, "scheduled:sch-d", 10)
            .await
            .unwrap()
            .len(),
        0
    );

    // Writes go on where they were; bob's `chat` is a session of his own.
    assert_eq!(
        memory
            .append(
                "alice",
                "chat",
                &[NewEvent::new(Role::User, "still glowing")]
            )
            .await
            .unwrap(),
        [3]
    );
    assert_eq!(
        memory
            .append("bob", "chat", &[NewEvent::new(Role::User, "bob's chat")])
            .await
            .unwrap(),
        [1]
    );
    memory.forget(&alice, "chat").await.unwrap();
    assert_eq!(memory.recall(&bob, "chat", 10).await.unwrap().len(), 1);
    let conn = db.conn().await.unwrap();
    for table in [
        "events",
        "chunks",
        "chunk_vectors",
        "artifacts",
        "vector_blocks",
    ] {
        assert_eq!(
            scalar_of(
                &conn,
                &format!(
                    "SELECT count(*) FROM {table} WHERE session_id = 'alice' || char(31) || 'chat'"
                )
            )
            .await,
            0,
            "{table}"
        );
    }
}

/// Upgrading gives each chunk of a turn its turn's role and a note's chunks none, so that
/// search, which now reads the role from the chunk, still prefers the user's own turn to
/// the assistant's for a question in the first person (the two match alike, and without
/// the roles the later turn, the assistant's, would come first).
#[tokio::test]
async fn upgrading_gives_each_turns_chunks_its_role() {
    let dir = TempDir::new().unwrap();
    let config = config_in(&dir);
    let db = open_db(&config).await.unwrap();
    migrate::migrate_to(&db, 41).await.unwrap();
    let conn = db.conn().await.unwrap();
    let chat = nightshift::memory::SessionKey::new("u", "chat");
    let notes = nightshift::memory::SessionKey::new("u", "memory:u");
    for (sql, key) in [
        (
            "INSERT INTO sessions (session_id, user_id, kind, created_at, updated_at,
                                   last_sequence)
             VALUES (?1, 'u', 'conversation', 1, 1, 2)",
            chat.as_str(),
        ),
        (
            "INSERT INTO sessions (session_id, user_id, kind, created_at, updated_at,
                                   last_sequence)
             VALUES (?1, 'u', 'memory', 1, 1, 0)",
            notes.as_str(),
        ),
        (
            "INSERT INTO events (session_id, sequence, role, content, importance, created_at)
             VALUES (?1, 1, 'user', 'my lantern is copper', 0.5, 1),
                    (?1, 2, 'assistant', 'your lantern is copper', 0.5, 2)",
            chat.as_str(),
        ),
        (
            "INSERT INTO chunks (chunk_id, session_id, user_id, scope, text, content_hash,
                                 sequence_start, sequence_end, created_at)
             VALUES (1, ?1, 'u', '', 'my lantern is copper', 'h1', 1, 1, 1),
                    (2, ?1, 'u', '', 'your lantern is copper', 'h2', 2, 2, 2)",
            chat.as_str(),
        ),
        (
            "INSERT INTO notes (note_id, user_id, content, created_at, updated_at)
             VALUES ('note-1', 'u', 'keeps bees', 3, 3)",
            notes.as_str(),
        ),
        (
            "INSERT INTO chunks (chunk_id, session_id, user_id, note_id, scope, text,
                                 content_hash, sequence_start, sequence_end, created_at)
             VALUES (3, ?1, 'u', 'note-1', '', 'keeps bees', 'h3', 1, 1, 3)",
            notes.as_str(),
        ),
    ] {
        let params: Vec<libsql::Value> = if sql.contains("?1") {
            vec![key.into()]
        } else {
            Vec::new()
        };
        conn.execute(sql, params).await.unwrap();
    }
    drop(conn);
    migrate::migrate(&db).await.unwrap();
    let conn = db.conn().await.unwrap();
    let mut rows = conn
        .query(
            "SELECT chunk_id, coalesce(role, '-') FROM chunks ORDER BY chunk_id",
            (),
        )
        .await
        .unwrap();
    let mut roles = Vec::new();
    while let Some(row) = rows.next().await.unwrap() {
        roles.push((row.get::<i64>(0).unwrap(), row.get::<String>(1).unwrap()));
    }
    assert_eq!(
        roles,
        [(1, "user".into()), (2, "assistant".into()), (3, "-".into())]
    );
    drop(rows);
    drop(conn);

    let memory = open_memory(&config).await.unwrap();
    let hits = memory
        .search(&nightshift::memory::SearchRequest {
            user_id: "u".into(),
            query: "what did I say about my copper lantern".into(),
            session_id: Some("chat".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(hits.first().and_then(|h| h.sequence), Some(1), "{hits:?}");
}
