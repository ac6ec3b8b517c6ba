//! `nightshift memory …`

use nightshift::access::Actor;
use nightshift::app::App;
use nightshift::db::clock::to_rfc3339;
use nightshift::error::Error;
use nightshift::memory::{
    AppendedEvents, ContextRequest, HitSource, Memory, NewEvent, NewNote, NoteDeleted, Origin,
    SearchRequest, SearchResponse, SessionForgotten,
};

use super::args::{AppendArgs, MemoryCommand};
use super::input::{file_arg, text_arg};
use super::output::{note, print};

pub async fn run(app: &App, command: MemoryCommand, json: bool) -> Result<(), Error> {
    let memory = &app.memory().by(Origin::Cli);
    let max_text = memory.limits().max_text_bytes;
    match command {
        MemoryCommand::Save {
            user,
            tags,
            key,
            category,
            agent,
            text,
        } => {
            let memory = &agent.memory(memory)?;
            let note = NewNote {
                content: text_arg("note", text, max_text)?,
                tags,
                key,
                category,
                ..Default::default()
            };
            let outcome = memory.save_note(&user, &note).await?;
            settle_embeddings(memory).await;
            print(json, &outcome, || {
                let verb = if outcome.created { "saved" } else { "replaced" };
                format!("{verb} {}", outcome.note_id)
            })
        }
        MemoryCommand::Search {
            user,
            top_k,
            session,
            filter,
            window,
            as_of,
            agent,
            query,
        } => {
            let memory = &agent.memory(memory)?;
            let request = SearchRequest {
                user_id: user,
                query,
                top_k,
                session_id: session,
                filter: (*filter).into_filter()?,
                window: window.into_window()?,
                as_of: as_of.instant()?,
                ..Default::default()
            };
            let results = SearchResponse::from(memory.search_detailed(&request).await?);
            if let Some(reason) = &results.degraded_reason {
                note(reason);
            }
            print(json, &results, || {
                if results.hits.is_empty() {
                    return "no results".to_string();
                }
                results
                    .hits
                    .iter()
                    .enumerate()
                    .map(|(i, hit)| {
                        let origin = match hit.source {
                            HitSource::Note => hit.note_id.clone().unwrap_or_default(),
                            HitSource::Conversation => format!(
                                "{}#{}{}",
                                hit.session_id.as_deref().unwrap_or_default(),
                                hit.sequence.unwrap_or_default(),
                                speaker(hit.name.as_deref())
                            ),
                        };
                        format!(
                            "{:>2}. [{:.3}] {origin}\n    {}",
                            i + 1,
                            hit.score,
                            hit.text
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            })
        }
        MemoryCommand::Update {
            user,
            tags,
            agent,
            note_id,
            text,
        } => {
            let memory = &agent.memory(memory)?;
            let text = text_arg("note", text, max_text)?;
            let tags = (!tags.is_empty()).then_some(tags);
            let note = memory
                .update_note(&user, &note_id, &text, tags.as_deref())
                .await?;
            settle_embeddings(memory).await;
            print(json, &note, || format!("updated {}", note.note_id))
        }
        MemoryCommand::Delete {
            user,
            agent,
            note_id,
        } => {
            agent.memory(memory)?.delete_note(&user, &note_id).await?;
            let out = NoteDeleted {
                note_id,
                deleted: true,
            };
            print(json, &out, || format!("deleted {}", out.note_id))
        }
        MemoryCommand::Notes {
            user,
            filter,
            as_of,
            agent,
        } => {
            let memory = &agent.memory(memory)?;
            let filter = (*filter).into_filter()?;
            if let Some(at) = as_of.instant()? {
                if !filter.is_empty() {
                    return Err(nightshift::input::InputError::new(
                        "as_of",
                        "cannot be combined with note filters",
                    )
                    .into());
                }
                let versions = memory.notes_as_of(&user, at).await?;
                return print(json, &versions, || {
                    versions
                        .iter()
                        .map(|v| {
                            format!(
                                "{}  v{}  {}  {}",
                                v.note_id,
                                v.version,
                                to_rfc3339(v.changed_at),
                                v.content
                            )
                        })
                        .collect::<Vec<_>>()
                        .join("\n")
                });
            }
            let notes = memory.notes_matching(&user, &filter).await?;
            print(json, &notes, || {
                notes
                    .iter()
                    .map(|n| format!("{}  {}  {}", n.note_id, to_rfc3339(n.updated_at), n.content))
                    .collect::<Vec<_>>()
                    .join("\n")
            })
        }
        MemoryCommand::Append(args) => append(memory, args, json).await,
        MemoryCommand::Recall {
            session,
            user,
            limit,
            window,
        } => {
            let actor = actor(user)?;
            let limit = limit.unwrap_or(app.config().memory.recall_limit);
            let window = window.into_window()?;
            let events = memory.recall_in(&actor, &session, limit, &window).await?;
            print(json, &events, || {
                events
                    .iter()
                    .map(|e| {
                        format!(
                            "#{} {} [{}{}] {}",
                            e.sequence,
                            to_rfc3339(e.created_at),
                            e.role.as_str(),
                            speaker(e.name.as_deref()),
                            e.content
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            })
        }
        MemoryCommand::Sessions { user } => {
            let sessions = memory.sessions(&user).await?;
            print(json, &sessions, || {
                sessions
                    .iter()
                    .map(|s| {
                        format!(
                            "{}  {}  {} events  updated {}",
                            s.session_id,
                            s.kind.as_str(),
                            s.last_sequence,
                            to_rfc3339(s.updated_at)
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            })
        }
        MemoryCommand::Summary { session, user } => {
            let actor = actor(user)?;
            let state = memory.read_summary(&actor, &session).await?;
            print(json, &state, || match &state.summary {
                Some(summary) => format!(
                    "{summary}\n(epoch {}, up to #{})",
                    state.epoch, state.upper_sequence
                ),
                None => format!("{session} has no summary yet"),
            })
        }
        MemoryCommand::Context {
            user,
            session,
            budget,
            query,
            strategy,
            agent,
        } => {
            let memory = &agent.memory(memory)?;
            let request = ContextRequest {
                user_id: user,
                session_id: session,
                budget_tokens: budget,
                query,
                strategy: strategy.parse()?,
            };
            let context = memory.context(&request).await?;
            print(json, &context, || context.render())
        }
        MemoryCommand::Forget { session, user } => {
            let actor = actor(user)?;
            memory.forget(&actor, &session).await?;
            let out = SessionForgotten {
                session_id: session,
                forgotten: true,
            };
            print(json, &out, || format!("forgot {}", out.session_id))
        }
        MemoryCommand::Versions(command) => super::versions::run(app, command, json).await,
    }
}

/// `--user` when given; otherwise the operator, which the CLI says (on stderr) when a
/// person is watching.
pub fn actor(user: Option<String>) -> Result<Actor, Error> {
    let actor = Actor::from_option(user)?;
    if actor.is_operator() && std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        note("acting as the operator (any user's data); pass --user to act as one user");
    }
    Ok(actor)
}

/// How long a CLI write stays to embed what it queued. The write has committed by then;
/// this only spares a setup without a running daemon from keyword-only search.
const CLI_EMBED_BUDGET: std::time::Duration = std::time::Duration::from_secs(2);

/// Embeds queued chunks briefly before the process exits; what is left (or fails) stays
/// queued for the daemon.
pub(super) async fn settle_embeddings(memory: &Memory) {
    if let Err(err) = memory.embed_queued_within(CLI_EMBED_BUDGET).await {
        tracing::warn!(%err, "embedding left to the daemon");
    }
}

async fn append(memory: &Memory, args: AppendArgs, json: bool) -> Result<(), Error> {
    let limits = memory.limits();
    let sequences = match (args.file, args.role, args.text) {
        (Some(path), _, _) => {
            let bytes = file_arg(&path, limits.max_import_bytes)?;
            memory
                .append_jsonl(&args.user, &args.session, &bytes)
                .await?
        }
        (None, Some(role), Some(text)) => {
            let event = NewEvent {
                name: args.name,
                ..NewEvent::new(
                    role.parse()?,
                    text_arg("event", text, limits.max_text_bytes)?,
                )
            };
            memory.append(&args.user, &args.session, &[event]).await?
        }
        _ => {
            return Err(Error::new(
                nightshift::error::ErrorKind::BadInput,
                "give --role and TEXT, or --file",
            ))
        }
    };
    settle_embeddings(memory).await;
    let out = AppendedEvents {
        session_id: args.session,
        sequences,
    };
    print(json, &out, || {
        format!(
            "appended {} event(s) to {}",
            out.sequences.len(),
            out.session_id
        )
    })
}

/// ` (Ann)` after an event said by a named speaker; nothing otherwise.
fn speaker(name: Option<&str>) -> String {
    name.map(|n| format!(" ({n})")).unwrap_or_default()
}
