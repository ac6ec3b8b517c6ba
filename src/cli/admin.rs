//! `nightshift db …`, `nightshift index …`, `nightshift config …`

use std::path::Path;

use indicatif::{ProgressBar, ProgressStyle};
use nightshift::app::{open_db, App};
use nightshift::config::Config;
use nightshift::db::{clock::to_rfc3339, migrate};
use nightshift::error::{Error, ErrorKind};
use serde_json::json;

use super::args::{DbCommand, IndexCommand, OutboxCommand, TokenCommand};
use super::output::{note, print};

/// A progress bar (drawn only when stderr is a terminal).
fn progress_bar(template: &str) -> ProgressBar {
    let style =
        ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar());
    ProgressBar::new(0).with_style(style)
}

/// Everything `nightshift run` would check of the file, before it touches a database.
pub fn config_check(path: Option<&Path>, json: bool) -> Result<(), Error> {
    let path = path.ok_or_else(|| {
        Error::new(
            ErrorKind::Config,
            "no configuration file given: pass PATH, --config or NIGHTSHIFT_CONFIG",
        )
    })?;
    let config = Config::load(path)?;
    let report = nightshift::app::check::check(&config)?;
    for warning in &report.warnings {
        note(warning);
    }
    print(
        json,
        &json!({ "path": path, "valid": true, "schedules": report.schedules,
                 "channels": report.channels, "warnings": report.warnings }),
        || format!("{}: valid", path.display()),
    )
}

pub async fn index(app: &App, command: IndexCommand, json: bool) -> Result<(), Error> {
    match command {
        IndexCommand::Rebuild => {
            let memory = app.memory();
            let bar = progress_bar("{bar:40} {pos}/{len} sessions {elapsed}");
            let report = memory
                .rebuild_index(&|done, total| {
                    bar.set_length(total as u64);
                    bar.set_position(done as u64);
                })
                .await?;
            bar.finish_and_clear();
            // Writes made during the rebuild were queued; embed them too.
            let bar = progress_bar("{bar:40} {pos}/{len} queued chunks {elapsed}");
            let queued = memory
                .embed_pending(&|done, total| {
                    bar.set_length(total as u64);
                    bar.set_position(done as u64);
                })
                .await?;
            bar.finish_and_clear();
            let out = json!({
                "sessions": report.sessions,
                "events": report.events,
                "notes": report.notes,
                "chunks": report.chunks,
                "queued_embedded": queued,
                "model": memory.embedder().model_id(),
            });
            print(json, &out, || {
                format!(
                    "rebuilt {} sessions: {} events and {} notes into {} chunks, embedded with {}",
                    report.sessions,
                    report.events,
                    report.notes,
                    report.chunks,
                    memory.embedder().model_id()
                )
            })
        }
    }
}

pub async fn db(config: &Config, command: DbCommand, json: bool) -> Result<(), Error> {
    match command {
        DbCommand::Migrate => {
            let db = open_db(config).await?;
            let applied = migrate::migrate(&db).await?;
            print(
                json,
                &json!({ "applied": applied, "schema_version": migrate::latest_version() }),
                || {
                    format!(
                        "applied {applied} migration(s); schema version {}",
                        migrate::latest_version()
                    )
                },
            )
        }
        DbCommand::Status => {
            let db = open_db(config).await?;
            let status =
                nightshift::app::db_status::db_status(&db, config.embedding.backend.as_str())
                    .await?;
            print(json, &status, || {
                let mut out = vec![
                    format!("database:       {}", status.database),
                    format!(
                        "schema version: {} (this binary: {}){}",
                        status.schema_version,
                        status.binary_schema_version,
                        if status.up_to_date {
                            ""
                        } else {
                            " — run `nightshift db migrate`"
                        }
                    ),
                ];
                for m in &status.migrations {
                    let when = m.applied_at.map_or("pending".to_string(), to_rfc3339);
                    out.push(format!("  {:04} {:<20} {when}", m.version, m.name));
                }
                for (name, n) in &status.counts {
                    out.push(format!("{name:<15} {n}"));
                }
                let embedding = &status.embedding;
                out.push(format!(
                    "embedding backend: {} (configured)",
                    embedding.backend
                ));
                if let Some(model) = &embedding.model {
                    out.push(format!("embedding model: {model}"));
                    out.push(format!(
                        "waiting for a vector: {} chunk(s){}",
                        embedding.pending,
                        if embedding.reembedding {
                            " — re-embedding after a model change; search uses keywords until done"
                        } else {
                            ""
                        }
                    ));
                }
                out.join("\n")
            })
        }
    }
}

pub async fn outbox(app: &App, command: OutboxCommand, json: bool) -> Result<(), Error> {
    let outbox = app.outbox();
    let show = |m: &nightshift::notify::outbox::Message| {
        format!(
            "{}  {:<9}  {}  {} attempt(s)  {}{}",
            m.message_id,
            m.status,
            m.channel_id,
            m.attempts,
            m.payload["summary"].as_str().unwrap_or_default(),
            m.last_error
                .as_deref()
                .map(|e| format!("  [{e}]"))
                .unwrap_or_default()
        )
    };
    match command {
        OutboxCommand::List { status, limit } => {
            let messages = outbox.list(status.as_deref(), limit).await?;
            print(json, &messages, || {
                messages.iter().map(show).collect::<Vec<_>>().join("\n")
            })
        }
        OutboxCommand::Retry { id } => {
            let message = outbox
                .retry(&id, app.clock().now_ms(), &app.config().notify)
                .await?;
            print(json, &message, || format!("{id} is pending again"))
        }
    }
}

/// `consolidate --pass facts --dry-run`: the facts the pass would store, nothing written.
pub async fn facts_dry_run(
    app: &App,
    passes: Vec<String>,
    user: Option<String>,
    json: bool,
) -> Result<(), Error> {
    if passes != ["facts"] {
        return Err(Error::new(
            ErrorKind::BadInput,
            "--dry-run works with `--pass facts` alone",
        ));
    }
    let dry = app
        .consolidator(None)
        .facts_dry_run(user.as_deref())
        .await?;
    print(json, &dry, || {
        let mut lines: Vec<String> = dry
            .facts
            .iter()
            .map(|f| {
                format!(
                    "{:<11} {} {}#{}  [{}] {}",
                    f.outcome.as_str(),
                    f.user_id,
                    f.session_id,
                    f.sequence,
                    f.key,
                    f.content
                )
            })
            .collect();
        if lines.is_empty() {
            lines.push("no facts to extract".into());
        }
        if dry.prompt_tokens + dry.completion_tokens > 0 {
            lines.push(format!(
                "model: {} prompt + {} completion tokens, cost {:.6}",
                dry.prompt_tokens, dry.completion_tokens, dry.cost
            ));
        }
        lines.join("\n")
    })
}

pub async fn consolidate(
    app: &App,
    passes: Vec<String>,
    user: Option<String>,
    status: bool,
    limit: i64,
    json: bool,
) -> Result<(), Error> {
    use nightshift::consolidate::Pass;
    let passes: Vec<Pass> = if passes.is_empty() {
        Pass::ALL.to_vec()
    } else {
        passes.iter().map(|p| p.parse()).collect::<Result<_, _>>()?
    };
    if let Some(user) = &user {
        nightshift::input::check_user_id(user)?;
    }
    nightshift::input::check_range("--limit", limit, 1..=1000)?;
    let consolidator = app.consolidator(None);
    let reports = if status {
        consolidator.status(limit).await?
    } else {
        let bar = progress_bar("{prefix:>10} {bar:30} {pos}/{len} sessions");
        let progress_bar = bar.clone();
        let progress: nightshift::consolidate::Progress =
            std::sync::Arc::new(move |pass, done, total| {
                progress_bar.set_prefix(pass.as_str());
                progress_bar.set_length(total as u64);
                progress_bar.set_position(done as u64);
            });
        let reports = consolidator
            .run(&passes, user.as_deref(), Some(progress))
            .await?;
        bar.finish_and_clear();
        reports
    };
    print(json, &reports, || {
        reports
            .iter()
            .map(|r| {
                format!(
                    "{}  {:<9}  {:<9}  {}{}",
                    to_rfc3339(r.started_at),
                    r.pass,
                    r.status,
                    r.counts,
                    r.error
                        .as_deref()
                        .map(|e| format!("  error: {e}"))
                        .unwrap_or_default()
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    })
}

pub async fn workers(app: &App, json: bool) -> Result<(), Error> {
    let memory = app.memory();
    let lease_ms = app.config().scheduler.lease_secs * 1000;
    let workers =
        nightshift::registry::list(memory.db(), memory.clock().as_ref(), lease_ms).await?;
    print(json, &workers, || {
        if workers.is_empty() {
            return "no workers registered".to_string();
        }
        workers
            .iter()
            .map(|w| {
                format!(
                    "{}  {}  {}@{} v{}  heartbeat {}  {} run(s), {} message(s)",
                    w.worker_id,
                    if w.alive { "alive" } else { "gone " },
                    w.pid,
                    w.host,
                    w.version,
                    to_rfc3339(w.heartbeat_at),
                    w.running_runs,
                    w.outbox_leases
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    })
}

pub async fn token(app: &App, command: TokenCommand, json: bool) -> Result<(), Error> {
    use nightshift::tokens::{NewToken, TokenInfo};
    let show = |t: &TokenInfo| {
        format!(
            "{}  {:<5}  {}  {}  created {}  last used {}  {}",
            t.token_id,
            match t.scope {
                nightshift::tokens::Scope::Admin => "admin",
                nightshift::tokens::Scope::User => "user",
            },
            t.user_id.as_deref().unwrap_or("-"),
            t.name.as_deref().unwrap_or("-"),
            to_rfc3339(t.created_at),
            t.last_used_at.map_or("never".to_string(), to_rfc3339),
            match (t.revoked_at, t.expires_at) {
                (Some(at), _) => format!("revoked {}", to_rfc3339(at)),
                (None, Some(at)) => format!("expires {}", to_rfc3339(at)),
                (None, None) => "no expiry".to_string(),
            }
        )
    };
    match command {
        TokenCommand::Create {
            user,
            admin: _,
            name,
            expires,
        } => {
            let expires_in_secs = expires
                .map(|text| {
                    nightshift::schedule::cadence::parse_duration(&text)
                        .map_err(|e| nightshift::input::InputError::new("--expires", e.to_string()))
                })
                .transpose()?;
            let created = app
                .tokens()
                .create(&NewToken {
                    user_id: user,
                    name,
                    expires_in_secs,
                })
                .await?;
            if !json {
                note("the secret is shown this once; keep it where the agent can read it");
            }
            print(json, &created, || {
                format!("{}\n{}", show(&created.info), created.secret)
            })
        }
        TokenCommand::List => {
            let tokens = app.tokens().list().await?;
            print(json, &tokens, || {
                if tokens.is_empty() {
                    return "no tokens".to_string();
                }
                tokens.iter().map(show).collect::<Vec<_>>().join("\n")
            })
        }
        TokenCommand::Revoke { id } => {
            let token = app.tokens().revoke(&id).await?;
            print(json, &token, || format!("revoked {}", token.token_id))
        }
    }
}
