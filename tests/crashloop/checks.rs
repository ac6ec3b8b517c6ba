//! The invariants checked after every kill, on the database the killed processes left:
//! it is sound, its derived index is in step with its rows, nothing of a forgotten session
//! or a deleted note is left, nothing confirmed is lost (each event and note with its
//! confirmed text), every due occurrence is accounted for by a run or recorded skip, the
//! model was asked for each run at most once per attempt and a succeeded run's last
//! attempt answered exactly once, every finished run has its transcript and its message,
//! every message marked delivered reached the webhook, no message was sent twice by one
//! worker, and summary epochs only go up.

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
         GROUP BY schedule_id, scheduled_for HAVING count(*) > 1) AS twice",
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
    /// Kills that found the model in the middle of a run of the killed worker.
    pub kills_mid_run: u64,
}

/// What the runs came to at the model, for the report and the final assertions.
#[derive(Default)]
pub struct AtTheModel {
    /// Attempts the model was asked to run.
    pub attempts: usize,
    /// Runs recorded succeeded, each with the one answer the model gave its last attempt.
    pub successes: usize,
    /// Of them, runs the model had been asked for by a worker killed before it finished.
    pub recovered: usize,
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
            kills_mid_run: 0,
        }
    }

    async fn conn(&self) -> Conn {
        self.db.conn().await.expect("a connection for the checks")
    }

    /// The checks' SQL as the engine reads it: PostgreSQL spells SQLite's `char` and
    /// `instr` as `chr` and `strpos`.
    fn dialect(&self, sql: &str) -> String {
        if self.db.is_postgres() {
            sql.replace("char(31)", "chr(31)")
                .replace("instr(", "strpos(")
        } else {
            sql.to_string()
        }
    }

    async fn rows(&self, sql: &str) -> Vec<Vec<Value>> {
        let sql = &self.dialect(sql);
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

    /// SQLite's `integrity_check` of the file, and FTS5's of the note versions' index.
    async fn sqlite_integrity(&self, found: &mut Vec<String>) {
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
        // SQLite's own checks of its file and of the FTS index; PostgreSQL keeps its
        // tables and indexes whole through a kill by its write-ahead log.
        if !self.db.is_postgres() {
            self.sqlite_integrity(&mut found).await;
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
        found.extend(self.runs_at_the_model(sink).await);
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
                   UNION SELECT session_id FROM chunks UNION SELECT session_id FROM chunk_vectors)
                   AS keys",
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

    /// Appends, saves and updates a command confirmed are there, whole, with their text:
    /// every event whose append returned, each killed append's events all or none, and
    /// nothing else; every note whose save returned, holding the text of its last
    /// confirmed save or update (or of an update killed since).
    async fn confirmed_writes(&self, books: &crate::writers::Books) -> Vec<String> {
        let mut events: HashMap<String, HashMap<String, u64>> = HashMap::new();
        for row in self
            .rows(
                "SELECT substr(session_id, instr(session_id, char(31)) + 1), content FROM events
                 WHERE substr(session_id, instr(session_id, char(31)) + 1) LIKE 'chat-%'",
            )
            .await
        {
            if let (Some(session), Some(content)) = (text(&row[0]), text(&row[1])) {
                *events
                    .entry(session)
                    .or_default()
                    .entry(content)
                    .or_default() += 1;
            }
        }
        let notes: HashMap<String, String> = self
            .rows("SELECT note_id, content FROM notes")
            .await
            .into_iter()
            .filter_map(|r| Some((text(&r[0])?, text(&r[1])?)))
            .collect();
        let mut found = Vec::new();
        for (session, appended) in &books.appended {
            let mut held = events.remove(session).unwrap_or_default();
            for confirmed in &appended.confirmed {
                if take(&mut held, confirmed) != 1 {
                    found.push(format!(
                        "session {session}: the confirmed event {confirmed:?} is not there once"
                    ));
                }
            }
            for batch in &appended.maybe {
                let there: Vec<u64> = batch.iter().map(|t| take(&mut held, t)).collect();
                if !(there.iter().all(|n| *n == 1) || there.iter().all(|n| *n == 0)) {
                    found.push(format!(
                        "session {session}: a killed append is there in part: {batch:?} {there:?}"
                    ));
                }
            }
            if !held.is_empty() {
                found.push(format!(
                    "session {session} holds events no append made: {:?}",
                    held.keys().collect::<Vec<_>>()
                ));
            }
        }
        for session in events.keys() {
            found.push(format!("session {session} holds events no append made"));
        }
        for (id, note) in &books.notes {
            match notes.get(id) {
                None => found.push(format!("confirmed note {id} is lost")),
                Some(content) if *content != note.confirmed && !note.maybe.contains(content) => {
                    found.push(format!(
                        "note {id} holds {content:?}, not its confirmed {} {:?}{}",
                        if note.updated { "update" } else { "save" },
                        note.confirmed,
                        if note.maybe.is_empty() {
                            String::new()
                        } else {
                            format!(" nor a killed update's {:?}", note.maybe)
                        }
                    ))
                }
                Some(_) => {}
            }
        }
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

    /// The runs as the model saw them: no attempt asked twice or answered twice, none
    /// asked beyond the attempt its run is at or for a run that is not there; every
    /// succeeded run's last attempt answered exactly once, with the output recorded; and
    /// its earlier attempts asked only by workers killed before that last one started.
    async fn runs_at_the_model(&self, sink: &Sink) -> Vec<String> {
        let mut found = sink.strays();
        let runs = self.runs().await;
        let attempts = sink.attempts();
        for ((run, attempt), seen) in &attempts {
            if seen.asked.len() > 1 {
                found.push(format!(
                    "run {run}, attempt {attempt}: the model was asked {} times (worker generations {:?})",
                    seen.asked.len(),
                    seen.asked
                ));
            }
            if seen.answers.len() > 1 {
                found.push(format!(
                    "run {run}, attempt {attempt}: the model answered it {} times: {:?}",
                    seen.answers.len(),
                    seen.answers
                ));
            }
            match runs.get(run) {
                None => found.push(format!(
                    "the model was asked for run {run}, which is not in the database"
                )),
                Some((_, at, _)) if attempt > at => found.push(format!(
                    "the model was asked for attempt {attempt} of run {run}, which is at attempt {at}"
                )),
                Some(_) => {}
            }
        }
        for (run, (status, last, output)) in &runs {
            if status != "succeeded" {
                continue;
            }
            let Some(seen) = attempts.get(&(run.clone(), *last)) else {
                found.push(format!(
                    "run {run} succeeded at attempt {last}, which the model was never asked"
                ));
                continue;
            };
            if seen.answers != [output.clone()] {
                found.push(format!(
                    "run {run} succeeded at attempt {last} with {output:?}; the model answered that attempt {:?}",
                    seen.answers
                ));
            }
            let Some(&by) = seen.asked.first() else {
                continue;
            };
            for earlier in 1..*last {
                let Some(before) = attempts.get(&(run.clone(), earlier)) else {
                    continue;
                };
                if before.asked.iter().any(|g| *g >= by) {
                    found.push(format!(
                        "run {run}: attempt {earlier} (worker generations {:?}) was asked of the model by no earlier worker than attempt {last} (generation {by}): the run ran twice in one worker",
                        before.asked
                    ));
                }
            }
        }
        found
    }

    /// Every run of the cadence but skips: its status, attempt and output.
    async fn runs(&self) -> HashMap<String, (String, i64, String)> {
        self.rows(
            "SELECT run_id, status, attempt, coalesce(output, '') FROM schedule_runs
             WHERE event_id IS NULL AND status != 'skipped'",
        )
        .await
        .into_iter()
        .filter_map(|r| Some((text(&r[0])?, (text(&r[1])?, int(&r[2])?, text(&r[3])?))))
        .collect()
    }

    /// After a kill: whether the killed worker (of `generation`) left a run running that
    /// the model had been asked for, in its current attempt (a kill in the middle of a
    /// run, not before it reached the model nor after it was recorded).
    pub async fn killed(&mut self, sink: &Sink, generation: u64) -> bool {
        let attempts = sink.attempts();
        let mid_run = self
            .rows("SELECT run_id, attempt FROM schedule_runs WHERE status = 'running'")
            .await
            .into_iter()
            .filter_map(|r| Some((text(&r[0])?, int(&r[1])?)))
            .any(|key| {
                attempts
                    .get(&key)
                    .is_some_and(|seen| seen.asked.contains(&generation))
            });
        self.kills_mid_run += u64::from(mid_run);
        mid_run
    }

    /// The runs at the model, counted.
    pub async fn at_the_model(&self, sink: &Sink) -> AtTheModel {
        let attempts = sink.attempts();
        let mut counted = AtTheModel {
            attempts: attempts.len(),
            ..AtTheModel::default()
        };
        for (run, (status, last, output)) in self.runs().await {
            let answered = attempts
                .get(&(run.clone(), last))
                .is_some_and(|seen| seen.answers == [output.clone()]);
            if status != "succeeded" || !answered {
                continue;
            }
            counted.successes += 1;
            if (1..last).any(|earlier| attempts.contains_key(&(run.clone(), earlier))) {
                counted.recovered += 1;
            }
        }
        counted
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
        let model = self.at_the_model(sink).await;
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
        println!(
            "| kills in the middle of a run at the model | {} |",
            self.kills_mid_run
        );
        println!("| note updates confirmed | {} |", books.updates_confirmed);
        println!("| runs succeeded | {runs} |");
        println!("| runs finished by a later attempt after a kill | {recovered} |");
        println!(
            "| attempts the model was asked to run | {} |",
            model.attempts
        );
        println!(
            "| runs succeeded with the one answer the model gave their last attempt | {} |",
            model.successes
        );
        println!(
            "| of them, runs the model had been asked for by a killed worker | {} |",
            model.recovered
        );
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
            "crashloop_kills={kills} crashloop_kills_mid_run={} crashloop_operations={} crashloop_runs={runs} crashloop_runs_recovered={} crashloop_violations={}",
            self.kills_mid_run,
            operations + runs as u64 + delivered as u64,
            model.recovered,
            self.violations.len()
        );
    }
}

/// Takes one `text` from a multiset; how many there were.
fn take(held: &mut HashMap<String, u64>, text: &str) -> u64 {
    let n = held.remove(text).unwrap_or(0);
    if n > 1 {
        held.insert(text.to_string(), n - 1);
    }
    n
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
