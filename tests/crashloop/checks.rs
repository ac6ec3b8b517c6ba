//! The invariants checked after every kill, on the database the killed processes left:
//! it is sound, its derived index is in step with its rows, nothing of a forgotten session
//! or a deleted note is left, nothing confirmed is lost, every due occurrence is accounted
//! for by exactly one run or recorded skip, every finished run has its transcript and its
//! message, every message marked delivered reached the webhook, no message was sent twice
//! by one worker, and summary epochs only go up.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use libsql::Value;
use nightshift::db::{Conn, Db, DbOptions, DbTarget, Queryable};

use crate::peers::Sink;
use crate::writers::Ledger;

/// Rows that must not exist, by what they would mean.
const NO_ROWS: &[(&str, &str)] = &[
    (
        "chunks with neither a vector nor a queue row",
        "SELECT count(*) FROM chunks c WHERE NOT EXISTS
         (SELECT 1 FROM chunk_vectors v WHERE v.chunk_id = c.chunk_id)
         AND NOT EXISTS (SELECT 1 FROM embed_queue q WHERE q.chunk_id = c.chunk_id)",
    ),
    (
        "chunks of no session",
        "SELECT count(*) FROM chunks c WHERE NOT EXISTS
         (SELECT 1 FROM sessions s WHERE s.session_id = c.session_id)",
    ),
    (
        "chunks of a deleted note",
        "SELECT count(*) FROM chunks c WHERE c.note_id IS NOT NULL AND NOT EXISTS
         (SELECT 1 FROM notes n WHERE n.note_id = c.note_id)",
    ),
    (
        "events of no session",
        "SELECT count(*) FROM events e WHERE NOT EXISTS
         (SELECT 1 FROM sessions s WHERE s.session_id = e.session_id)",
    ),
    (
        "session state of no session",
        "SELECT count(*) FROM session_state t WHERE NOT EXISTS
         (SELECT 1 FROM sessions s WHERE s.session_id = t.session_id)",
    ),
    (
        "vectors of no chunk",
        "SELECT count(*) FROM chunk_vectors v WHERE NOT EXISTS
         (SELECT 1 FROM chunks c WHERE c.chunk_id = v.chunk_id)",
    ),
    (
        "queue rows of no chunk",
        "SELECT count(*) FROM embed_queue q WHERE NOT EXISTS
         (SELECT 1 FROM chunks c WHERE c.chunk_id = q.chunk_id)",
    ),
    (
        "succeeded runs without their transcript",
        "SELECT count(*) FROM schedule_runs r WHERE r.status = 'succeeded' AND NOT EXISTS
         (SELECT 1 FROM events e JOIN schedules s ON s.schedule_id = r.schedule_id
          WHERE e.session_id = s.user_id || char(31) || 'scheduled:' || r.schedule_id
          AND e.role = 'assistant' AND e.content = r.output)",
    ),
    (
        "succeeded runs without their message",
        "SELECT count(*) FROM schedule_runs r WHERE r.status = 'succeeded' AND NOT EXISTS
         (SELECT 1 FROM outbox o WHERE o.run_id = r.run_id)",
    ),
    (
        "occurrences with two runs",
        "SELECT count(*) FROM (SELECT 1 FROM schedule_runs WHERE event_id IS NULL
         GROUP BY schedule_id, scheduled_for HAVING count(*) > 1)",
    ),
    (
        "dead letters",
        "SELECT count(*) FROM outbox WHERE status = 'dead'",
    ),
];

pub struct Checker {
    target: DbTarget,
    db: Db,
    /// Each schedule and its first occurrence.
    schedules: Vec<(String, i64)>,
    /// The highest summary epoch seen per session.
    epochs: HashMap<String, i64>,
    violations: Vec<String>,
    rounds: u64,
}

impl Checker {
    pub async fn open(database: &str) -> Checker {
        let target = DbTarget::parse(database).unwrap();
        Checker {
            db: Db::open(&target, DbOptions::default()).await.unwrap(),
            target,
            schedules: Vec::new(),
            epochs: HashMap::new(),
            violations: Vec::new(),
            rounds: 0,
        }
    }

    async fn conn(&self) -> Conn {
        self.db.conn().await.expect("a connection for the checks")
    }

    async fn rows(&self, sql: &str) -> Vec<Vec<Value>> {
        let conn = self.conn().await;
        let mut rows = conn
            .query_rows(sql, ())
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
        let mut out = Vec::new();
        while let Some(row) = rows.next().await.unwrap() {
            out.push(
                (0..row.column_count())
                    .map(|i| row.get_value(i).unwrap())
                    .collect(),
            );
        }
        out
    }

    async fn count(&self, sql: &str) -> i64 {
        match self.rows(sql).await.first().and_then(|r| r.first()) {
            Some(Value::Integer(n)) => *n,
            _ => 0,
        }
    }

    pub async fn expect_schedule(&mut self, id: &str) {
        let first = self
            .count(&format!(
                "SELECT next_run_at FROM schedules WHERE schedule_id = '{id}'"
            ))
            .await;
        self.schedules.push((id.to_string(), first));
    }

    pub fn violation(&mut self, what: String) {
        eprintln!("VIOLATION: {what}");
        self.violations.push(what);
    }

    pub fn violations(&self) -> usize {
        self.violations.len()
    }

    pub fn list(&self) -> &[String] {
        &self.violations
    }

    /// Every invariant, on the database as the last kill left it.
    pub async fn check(&mut self, ledger: &Ledger, sink: &Sink, last: bool) {
        self.rounds += 1;
        let round = self.rounds;
        // Fresh connections: SQLite 3.45's FTS5 check inside `PRAGMA integrity_check`
        // reads the index structure a connection cached, and one cached before another
        // process rebuilt the index is reported as "malformed inverted index" though the
        // file is sound (a new connection, and SQLite 3.50, find it so).
        self.db = Db::open(&self.target, DbOptions::default()).await.unwrap();
        let mut found = Vec::new();
        let integrity = self.rows("PRAGMA integrity_check").await;
        if !matches!(integrity.first().and_then(|r| r.first()), Some(Value::Text(ok)) if ok == "ok")
        {
            found.push(format!("integrity_check: {integrity:?}"));
        }
        if let Err(e) = self
            .conn()
            .await
            .execute(
                "INSERT INTO note_versions_fts (note_versions_fts) VALUES ('integrity-check')",
                (),
            )
            .await
        {
            found.push(format!(
                "the FTS index is out of step with note versions: {e}"
            ));
        }
        for (what, sql) in NO_ROWS {
            let n = self.count(sql).await;
            if n > 0 {
                found.push(format!("{n} {what}"));
            }
        }
        let books = ledger.books();
        found.extend(
            books
                .failures
                .iter()
                .map(|f| format!("a writer failed: {f}")),
        );
        found.extend(
            self.forgotten_and_deleted(&books.forgotten, &books.deleted_notes)
                .await,
        );
        found.extend(self.confirmed_writes(&books).await);
        found.extend(self.epochs_only_go_up(&books.forgotten).await);
        found.extend(self.occurrences().await);
        found.extend(self.deliveries(sink).await);
        if last {
            let running = self
                .count("SELECT count(*) FROM schedule_runs WHERE status = 'running'")
                .await;
            if running > 0 {
                found.push(format!("{running} runs still running after a clean stop"));
            }
        }
        for what in found {
            self.violation(format!("check {round}: {what}"));
        }
    }

    async fn forgotten_and_deleted(
        &self,
        forgotten: &HashSet<String>,
        deleted: &HashSet<String>,
    ) -> Vec<String> {
        let sessions: HashSet<String> = self
            .rows(
                "SELECT DISTINCT substr(s, instr(s, char(31)) + 1) FROM (
                   SELECT session_id AS s FROM events UNION SELECT session_id FROM sessions
                   UNION SELECT session_id FROM chunks UNION SELECT session_id FROM chunk_vectors)",
            )
            .await
            .into_iter()
            .filter_map(|r| text(&r[0]))
            .collect();
        let notes: HashSet<String> = self
            .rows("SELECT note_id FROM notes UNION SELECT note_id FROM chunks WHERE note_id IS NOT NULL")
            .await
            .into_iter()
            .filter_map(|r| text(&r[0]))
            .collect();
        let mut found = Vec::new();
        found.extend(
            forgotten
                .intersection(&sessions)
                .map(|s| format!("rows of forgotten session {s} remain")),
        );
        found.extend(
            deleted
                .intersection(&notes)
                .map(|n| format!("rows of deleted note {n} remain")),
        );
        found
    }

    /// Appends and saves a command confirmed are there, whole.
    async fn confirmed_writes(&self, books: &crate::writers::Books) -> Vec<String> {
        let events: HashMap<String, i64> = self
            .rows(
                "SELECT substr(session_id, instr(session_id, char(31)) + 1), count(*) FROM events
                 GROUP BY 1",
            )
            .await
            .into_iter()
            .filter_map(|r| Some((text(&r[0])?, int(&r[1])?)))
            .collect();
        let notes: HashSet<String> = self
            .rows("SELECT note_id FROM notes")
            .await
            .into_iter()
            .filter_map(|r| text(&r[0]))
            .collect();
        let mut found = Vec::new();
        for (session, (confirmed, maybe)) in &books.appended {
            let n = events.get(session).copied().unwrap_or(0) as u64;
            if n < *confirmed || n > confirmed + maybe {
                found.push(format!(
                    "session {session} holds {n} events; {confirmed} were confirmed and {maybe} more may have been"
                ));
            }
        }
        found.extend(
            books
                .notes
                .difference(&notes)
                .map(|n| format!("confirmed note {n} is lost")),
        );
        found
    }

    async fn epochs_only_go_up(&mut self, forgotten: &HashSet<String>) -> Vec<String> {
        let mut found = Vec::new();
        for row in self
            .rows(
                "SELECT substr(session_id, instr(session_id, char(31)) + 1), summary_epoch
                 FROM session_state",
            )
            .await
        {
            let (Some(session), Some(epoch)) = (text(&row[0]), int(&row[1])) else {
                continue;
            };
            let seen = self.epochs.entry(session.clone()).or_insert(epoch);
            if epoch < *seen && !forgotten.contains(&session) {
                found.push(format!(
                    "session {session}'s summary epoch went from {seen} to {epoch}"
                ));
            }
            *seen = (*seen).max(epoch);
        }
        found
    }

    /// Every occurrence from a schedule's first up to its next has exactly one run or
    /// recorded skip (or lies in a recorded "passed over" range), and no run is off the
    /// cadence.
    async fn occurrences(&self) -> Vec<String> {
        let mut found = Vec::new();
        for (id, first) in &self.schedules {
            let next = self
                .count(&format!(
                    "SELECT next_run_at FROM schedules WHERE schedule_id = '{id}'"
                ))
                .await;
            let runs = self
                .rows(&format!(
                    "SELECT scheduled_for, status, coalesce(error, '') FROM schedule_runs
                     WHERE schedule_id = '{id}' AND event_id IS NULL ORDER BY scheduled_for"
                ))
                .await;
            let mut expected = *first;
            let mut lost = Vec::new();
            for run in &runs {
                let at = int(&run[0]).unwrap();
                if at < expected || (at - first) % 1000 != 0 {
                    found.push(format!("schedule {id}: a run at {at} is off its cadence"));
                    continue;
                }
                while expected < at {
                    lost.push(expected);
                    expected += 1000;
                }
                expected = at + 1000;
                let reason = text(&run[2]).unwrap_or_default();
                if let Some(until) = passed_over_until(&reason) {
                    expected = expected.max(until + 1000);
                }
            }
            while expected < next {
                lost.push(expected);
                expected += 1000;
            }
            if !lost.is_empty() {
                found.push(format!(
                    "schedule {id}: {} occurrences with no run or skip, first at {}",
                    lost.len(),
                    lost[0]
                ));
            }
        }
        found
    }

    /// Every message marked delivered reached the webhook, and no worker sent one twice.
    async fn deliveries(&self, sink: &Sink) -> Vec<String> {
        let got = sink.deliveries();
        let mut found = Vec::new();
        for row in self
            .rows("SELECT idempotency_key FROM outbox WHERE status = 'delivered' AND channel_id = 'hook'")
            .await
        {
            let key = text(&row[0]).unwrap();
            if !got.contains_key(&key) {
                found.push(format!("message {key} is marked delivered but never arrived"));
            }
        }
        for (key, generations) in &got {
            let distinct: HashSet<_> = generations.iter().collect();
            if distinct.len() < generations.len() {
                found.push(format!(
                    "message {key} was sent twice by one worker: {generations:?}"
                ));
            }
        }
        found
    }

    /// Waits until nothing is left to do: no run going, no message pending, every
    /// schedule caught up, every chunk embedded but those of a batch a killed worker had
    /// claimed (taken again when its lease, two minutes, runs out).
    pub async fn wait_drained(&self, limit: Duration) -> bool {
        let started = std::time::Instant::now();
        while started.elapsed() < limit {
            if self.pending_count().await == 0 {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        false
    }

    async fn pending_count(&self) -> i64 {
        self.count(&format!(
            "SELECT (SELECT count(*) FROM schedule_runs WHERE status = 'running')
             + (SELECT count(*) FROM outbox WHERE status = 'pending')
             + (SELECT count(*) FROM embed_queue WHERE claim_expires_at IS NULL
                OR claim_expires_at <= {now})
             + (SELECT count(*) FROM schedules WHERE next_run_at < {now} - 3000)",
            now = nightshift::db::clock::now_ms()
        ))
        .await
    }

    pub async fn pending(&self) -> String {
        let rows = self
            .rows(
                "SELECT (SELECT count(*) FROM schedule_runs WHERE status = 'running'),
                   (SELECT count(*) FROM outbox WHERE status = 'pending'),
                   (SELECT count(*) FROM embed_queue)",
            )
            .await;
        format!(
            "running runs, pending messages, queued chunks: {:?}",
            rows.first()
        )
    }

    /// The figures of the run, as a table and as `name=value` lines.
    pub async fn report(&self, ledger: &Ledger, sink: &Sink, label: &str, kills: u32, seed: u64) {
        let books = ledger.books();
        let runs = self
            .count("SELECT count(*) FROM schedule_runs WHERE status = 'succeeded'")
            .await;
        let recovered = self
            .count("SELECT count(*) FROM schedule_runs WHERE status = 'succeeded' AND attempt > 1")
            .await;
        let delivered = self
            .count("SELECT count(*) FROM outbox WHERE status = 'delivered'")
            .await;
        let claimed = self
            .count("SELECT count(*) FROM embed_queue WHERE claim_token IS NOT NULL")
            .await;
        let redelivered: usize = sink.deliveries().values().map(|g| g.len() - 1).sum();
        let operations: u64 = books
            .ops
            .iter()
            .filter(|(k, _)| **k != "kills")
            .map(|(_, n)| n)
            .sum();
        println!("\ncrash loop: {label}, seed {seed}");
        println!("| figure | value |\n|---|---|");
        println!("| kills | {kills} |");
        for (op, n) in books.ops.iter().filter(|(op, _)| **op != "kills") {
            println!("| {op} | {n} |");
        }
        println!("| runs succeeded | {runs} |");
        println!("| runs finished by a later attempt after a kill | {recovered} |");
        println!("| messages delivered | {delivered} |");
        println!("| redeliveries after a kill (same key) | {redelivered} |");
        println!("| chunks left to a killed worker's claim until its lease ends | {claimed} |");
        println!(
            "| model calls | {} |",
            sink.chat_calls.load(std::sync::atomic::Ordering::SeqCst)
        );
        println!("| invariant checks | {} |", self.rounds);
        println!("| violations | {} |", self.violations.len());
        println!(
            "crashloop_kills={kills} crashloop_operations={} crashloop_runs={runs} crashloop_violations={}",
            operations + runs as u64 + delivered as u64,
            self.violations.len()
        );
    }
}

fn text(value: &Value) -> Option<String> {
    match value {
        Value::Text(s) => Some(s.clone()),
        _ => None,
    }
}

fn int(value: &Value) -> Option<i64> {
    match value {
        Value::Integer(n) => Some(*n),
        _ => None,
    }
}

/// The last occurrence a "passed over" skip covers (its reason names the range).
fn passed_over_until(reason: &str) -> Option<i64> {
    let tail = reason.split(" to ").nth(1)?;
    let until = tail.split_whitespace().next()?.trim_end_matches(':');
    chrono::DateTime::parse_from_rfc3339(until)
        .ok()
        .map(|t| t.timestamp_millis())
}
