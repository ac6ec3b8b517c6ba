//! The CLI writers: each a thread running `nightshift` commands one after another until
//! told to stop, recording in the [`Ledger`] what the database must now hold (what a
//! command confirmed) and what it may hold (what a command killed mid-way may have done).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use serde_json::Value;

use crate::Rng;

/// How a command ended.
pub enum Outcome {
    Done(Value),
    /// SIGKILLed by the driver.
    Killed,
    /// Refused with exit 1 because the database was out of reach (a libSQL server
    /// answering busy or refusing connections): allowed only where the run says so, and
    /// as uncertain as a kill (a commit whose answer was lost).
    Unavailable(String),
    Failed(String),
}

/// Runs commands on one configuration, knowing which are running so one can be killed.
pub struct Cli {
    config: PathBuf,
    in_flight: Mutex<Vec<u32>>,
    /// Whether a command refused as unavailable is booked as such rather than failed.
    tolerate_unavailable: bool,
}

impl Cli {
    pub fn new(config: PathBuf, tolerate_unavailable: bool) -> Cli {
        Cli {
            config,
            in_flight: Mutex::new(Vec::new()),
            tolerate_unavailable,
        }
    }

    pub fn run(&self, args: &[&str], stdin: Option<&str>) -> Outcome {
        let mut child = Command::new(env!("CARGO_BIN_EXE_nightshift"))
            .env("NIGHTSHIFT_LISTEN", "")
            .env_remove("NIGHTSHIFT_DB")
            .arg("--config")
            .arg(&self.config)
            .arg("--json")
            .args(args)
            .stdin(if stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let pid = child.id();
        self.in_flight.lock().unwrap().push(pid);
        if let Some(text) = stdin {
            // A writer killed before reading it closes the pipe: not this thread's error.
            let _ = child.stdin.take().unwrap().write_all(text.as_bytes());
        }
        let out = child.wait_with_output().unwrap();
        self.in_flight.lock().unwrap().retain(|p| *p != pid);
        use std::os::unix::process::ExitStatusExt;
        if out.status.signal() == Some(9) {
            return Outcome::Killed;
        }
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        // sqld busy or refusing; PostgreSQL going down, coming up or gone mid-command.
        let postgres_lost = stderr.contains("PostgreSQL at ")
            && [
                ": connection",
                ": error connecting",
                ": error communicating",
            ]
            .iter()
            .any(|sign| stderr.contains(sign));
        let out_of_reach = postgres_lost
            || [
                "SQLITE_BUSY",
                "database is locked",
                "429 Too Many Requests",
                "PostgreSQL 57P",
            ]
            .iter()
            .any(|sign| stderr.contains(sign));
        if self.tolerate_unavailable && out.status.code() == Some(1) && out_of_reach {
            return Outcome::Unavailable(stderr);
        }
        if !out.status.success() || stderr.contains("panicked") {
            return Outcome::Failed(format!("{args:?} exited {}: {stderr}", out.status));
        }
        match serde_json::from_slice(&out.stdout) {
            Ok(value) => Outcome::Done(value),
            Err(e) => Outcome::Failed(format!("{args:?} printed no JSON ({e})")),
        }
    }

    pub fn json(&self, args: &[&str]) -> Result<Value, String> {
        match self.run(args, None) {
            Outcome::Done(value) => Ok(value),
            Outcome::Killed => Err(format!("{args:?} was killed")),
            Outcome::Unavailable(why) => Err(why),
            Outcome::Failed(why) => Err(why),
        }
    }

    /// SIGKILLs one running command, chosen at random; false when none is running.
    pub fn kill_one_in_flight(&self, rng: &mut Rng) -> bool {
        let running = self.in_flight.lock().unwrap().clone();
        if running.is_empty() {
            return false;
        }
        crate::sigkill(running[rng.below(running.len() as u64) as usize]);
        true
    }
}

/// One session's appends: the texts that must be there, and per append killed mid-way
/// its texts, all of which are there or none.
#[derive(Default, Clone)]
pub struct Appended {
    pub confirmed: Vec<String>,
    pub maybe: Vec<Vec<String>>,
}

/// What a note must hold: the text its last confirmed save or update gave it, or one of
/// the texts of updates killed since (each committed whole or not at all).
#[derive(Default, Clone)]
pub struct NoteText {
    pub confirmed: String,
    pub maybe: Vec<String>,
    /// Whether `confirmed` came from an update.
    pub updated: bool,
}

/// What the writers did, and so what the database must and may hold.
#[derive(Default)]
pub struct Ledger {
    inner: Mutex<Books>,
}

#[derive(Default, Clone)]
pub struct Books {
    /// Per session, the texts of the events whose append was confirmed, and those of
    /// appends killed mid-way (each may or may not have been committed, whole).
    pub appended: HashMap<String, Appended>,
    /// Notes confirmed saved and not deleted since, with the text each must hold.
    pub notes: HashMap<String, NoteText>,
    /// Note updates confirmed.
    pub updates_confirmed: u64,
    /// Notes confirmed deleted, and sessions confirmed forgotten: nothing of them may be
    /// left.
    pub deleted_notes: HashSet<String>,
    pub forgotten: HashSet<String>,
    /// Operations done, by kind.
    pub ops: BTreeMap<&'static str, u64>,
    /// Commands that failed without being killed.
    pub failures: Vec<String>,
}

impl Ledger {
    pub fn books(&self) -> Books {
        self.inner.lock().unwrap().clone()
    }

    pub fn count(&self, op: &'static str) {
        *self.inner.lock().unwrap().ops.entry(op).or_default() += 1;
    }

    fn with<T>(&self, f: impl FnOnce(&mut Books) -> T) -> T {
        f(&mut self.inner.lock().unwrap())
    }

    /// Books a command's outcome: `done` on success, `op` counted; killed ones counted
    /// as such; failures kept to report.
    fn book(&self, op: &'static str, outcome: Outcome, done: impl FnOnce(&mut Books, Value)) {
        self.with(|books| match outcome {
            Outcome::Done(value) => {
                *books.ops.entry(op).or_default() += 1;
                done(books, value);
            }
            Outcome::Killed => *books.ops.entry("writer commands killed").or_default() += 1,
            Outcome::Unavailable(_) => {
                *books
                    .ops
                    .entry("writes refused as unavailable (exit 1)")
                    .or_default() += 1
            }
            Outcome::Failed(why) => books.failures.push(why),
        });
    }
}

/// A writer's loop: its commands, its books, the round's stop flag, its random source and
/// its number.
type Job = fn(&Cli, &Ledger, &AtomicBool, &mut Rng, usize);

/// The writer threads of one round.
pub struct Writers(Vec<JoinHandle<()>>);

impl Writers {
    pub fn start(
        cli: &Arc<Cli>,
        ledger: &Arc<Ledger>,
        stop: &Arc<AtomicBool>,
        seed: u64,
    ) -> Writers {
        let mut threads = Vec::new();
        let jobs: [Job; 4] = [appender, appender, notes_and_forgetting, maintenance];
        for (i, job) in jobs.into_iter().enumerate() {
            let (cli, ledger, stop) = (cli.clone(), ledger.clone(), stop.clone());
            threads.push(std::thread::spawn(move || {
                let mut rng = Rng::new(seed.wrapping_add(i as u64 * 7919));
                job(&cli, &ledger, &stop, &mut rng, i);
            }));
        }
        Writers(threads)
    }

    pub fn join(self) {
        for thread in self.0 {
            thread.join().expect("a writer thread panicked");
        }
    }
}

fn user(rng: &mut Rng) -> String {
    format!("u{}", rng.below(crate::USERS as u64))
}

/// One user event appended to `session`.
fn append_one(cli: &Cli, user: &str, session: &str, text: &str) -> Outcome {
    let args = [
        "memory",
        "append",
        "--user",
        user,
        "--session",
        session,
        "--role",
        "user",
        text,
    ];
    cli.run(&args, None)
}

/// Appends, one event or a batch of three, to a few sessions per user.
fn appender(cli: &Cli, ledger: &Ledger, stop: &AtomicBool, rng: &mut Rng, i: usize) {
    while !stop.load(Ordering::SeqCst) {
        let user = user(rng);
        let session = format!("chat-{i}-{user}-{}", rng.below(4));
        let n = rng.below(u64::MAX);
        let (outcome, texts) = if rng.below(3) == 0 {
            let texts: Vec<String> = (0..3)
                .map(|k| format!("plants need water on day {n} part {k}"))
                .collect();
            let batch: String = texts
                .iter()
                .enumerate()
                .map(|(k, text)| {
                    format!(
                        "{{\"role\":\"{}\",\"content\":\"{text}\"}}\n",
                        if k % 2 == 0 { "user" } else { "assistant" }
                    )
                })
                .collect();
            let args = [
                "memory",
                "append",
                "--user",
                &user,
                "--session",
                &session,
                "--file",
                "-",
            ];
            (cli.run(&args, Some(&batch)), texts)
        } else {
            let text = format!("remember the crashloop fact number {n} about {user}");
            (append_one(cli, &user, &session, &text), vec![text])
        };
        let killed = matches!(outcome, Outcome::Killed | Outcome::Unavailable(_));
        if killed {
            ledger.with(|books| {
                let appended = books.appended.entry(session.clone()).or_default();
                appended.maybe.push(texts.clone());
            });
        }
        ledger.book("events appended", outcome, |books, _| {
            let appended = books.appended.entry(session).or_default();
            appended.confirmed.extend(texts);
        });
    }
}

/// Saves notes, updates and deletes some; makes sessions and forgets them.
fn notes_and_forgetting(cli: &Cli, ledger: &Ledger, stop: &AtomicBool, rng: &mut Rng, _: usize) {
    let mut mine: Vec<(String, String)> = Vec::new();
    let mut step = 0u64;
    while !stop.load(Ordering::SeqCst) {
        step += 1;
        let n = rng.below(u64::MAX);
        match rng.below(5) {
            0 | 1 => {
                let user = user(rng);
                let text = format!("note {n} the crashloop keeps for {user}");
                let outcome = cli.run(&["memory", "save", "--user", &user, &text], None);
                ledger.book("notes saved", outcome, |books, value| {
                    let id = value["note_id"].as_str().unwrap().to_string();
                    let confirmed = NoteText {
                        confirmed: text,
                        ..NoteText::default()
                    };
                    books.notes.insert(id.clone(), confirmed);
                    mine.push((user, id));
                });
            }
            2 if !mine.is_empty() => {
                let (user, id) = mine[rng.below(mine.len() as u64) as usize].clone();
                let text = format!("note {n} updated by the crashloop");
                let outcome = cli.run(&["memory", "update", "--user", &user, &id, &text], None);
                if matches!(outcome, Outcome::Killed | Outcome::Unavailable(_)) {
                    ledger.with(|books| {
                        if let Some(note) = books.notes.get_mut(&id) {
                            note.maybe.push(text.clone());
                        }
                    });
                }
                ledger.book("notes updated", outcome, |books, _| {
                    books.updates_confirmed += 1;
                    books.notes.insert(
                        id,
                        NoteText {
                            confirmed: text,
                            maybe: Vec::new(),
                            updated: true,
                        },
                    );
                });
            }
            3 if !mine.is_empty() => {
                let (user, id) = mine.swap_remove(rng.below(mine.len() as u64) as usize);
                let outcome = cli.run(&["memory", "delete", "--user", &user, &id], None);
                // Killed mid-way, it may or may not be gone: no longer checked either way.
                ledger.with(|books| books.notes.remove(&id));
                ledger.book("notes deleted", outcome, |books, _| {
                    books.deleted_notes.insert(id);
                });
            }
            _ => {
                // A session of its own (no other writer touches it), then forgotten.
                let user = user(rng);
                let session = format!("forget-{n}");
                let text = format!("a passing remark {step}");
                let made = append_one(cli, &user, &session, &text);
                if !matches!(made, Outcome::Done(_)) {
                    ledger.book("events appended", made, |_, _| {});
                    continue;
                }
                let outcome = cli.run(
                    &["memory", "forget", "--user", &user, "--session", &session],
                    None,
                );
                ledger.book("sessions forgotten", outcome, |books, _| {
                    books.forgotten.insert(session);
                });
            }
        }
    }
}

/// Consolidation of one user's sessions and whole-index rebuilds, now and then.
fn maintenance(cli: &Cli, ledger: &Ledger, stop: &AtomicBool, rng: &mut Rng, _: usize) {
    while !stop.load(Ordering::SeqCst) {
        if rng.below(2) == 0 {
            let user = user(rng);
            let outcome = cli.run(&["consolidate", "--user", &user], None);
            ledger.book("consolidations", outcome, |_, _| {});
        } else {
            let outcome = cli.run(&["index", "rebuild"], None);
            ledger.book("index rebuilds", outcome, |_, _| {});
        }
    }
}
