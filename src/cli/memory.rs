//! `nightshift memory …`

use std::io::Read;

use anyhow::{Context, Result};
use nightshift::app::open_memory;
use nightshift::config::Config;
use nightshift::db::clock::to_rfc3339;
use nightshift::memory::{ContextRequest, HitSource, NewEvent, NewNote, SearchRequest};
use serde_json::json;

use super::args::{AppendArgs, MemoryCommand};
use super::{print, text_arg};

pub async fn run(config: &Config, command: MemoryCommand, json: bool) -> Result<()> {
    let memory = open_memory(config).await?;
    match command {
        MemoryCommand::Save {
            user,
            tags,
            key,
            category,
            text,
        } => {
            let note = NewNote {
                content: text_arg(text)?,
                tags,
                key,
                category,
                ..Default::default()
            };
            let outcome = memory.save_note(&user, &note).await?;
            settle_embeddings(&memory).await;
            print(json, &outcome, || {
                let verb = if outcome.created { "saved" } else { "replaced" };
                format!("{verb} {}", outcome.note_id)
            })
        }
        MemoryCommand::Search {
            user,
            top_k,
            session,
            tags,
            query,
        } => {
            let request = SearchRequest {
                user_id: user,
                query,
                top_k,
                session_id: session,
                tags,
            };
            let results = memory.search_detailed(&request).await?;
            let hits = &results.hits;
            if let Some(reason) = &results.degraded {
                eprintln!("note: {reason}");
            }
            let out = json!({
                "hits": hits,
                "degraded": results.degraded.is_some(),
                "degraded_reason": results.degraded,
            });
            print(json, &out, || {
                if hits.is_empty() {
                    return "no results".to_string();
                }
                hits.iter()
                    .enumerate()
                    .map(|(i, hit)| {
                        let origin = match hit.source {
                            HitSource::Note => hit.note_id.clone().unwrap_or_default(),
                            HitSource::Conversation => format!(
                                "{}#{}",
                                hit.session_id.as_deref().unwrap_or_default(),
                                hit.sequence.unwrap_or_default()
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
            note_id,
            text,
        } => {
            let text = text_arg(text)?;
            let tags = (!tags.is_empty()).then_some(tags);
            let note = memory
                .update_note(&user, &note_id, &text, tags.as_deref())
                .await?;
            settle_embeddings(&memory).await;
            print(json, &note, || format!("updated {}", note.note_id))
        }
        MemoryCommand::Delete { user, note_id } => {
            memory.delete_note(&user, &note_id).await?;
            print(
                json,
                &json!({ "note_id": note_id, "deleted": true }),
                || format!("deleted {note_id}"),
            )
        }
        MemoryCommand::Notes { user } => {
            let notes = memory.notes(&user).await?;
            print(json, &notes, || {
                notes
                    .iter()
                    .map(|n| format!("{}  {}  {}", n.note_id, to_rfc3339(n.updated_at), n.content))
                    .collect::<Vec<_>>()
                    .join("\n")
            })
        }
        MemoryCommand::Append(args) => append(&memory, args, json).await,
        MemoryCommand::Recall {
            session,
            user,
            limit,
        } => {
            let limit = limit.unwrap_or(config.memory.recall_limit);
            let events = memory.recall(&session, user.as_deref(), limit).await?;
            print(json, &events, || {
                events
                    .iter()
                    .map(|e| {
                        format!(
                            "#{} {} [{}] {}",
                            e.sequence,
                            to_rfc3339(e.created_at),
                            e.role.as_str(),
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
        MemoryCommand::Summary { session } => {
            let state = memory.read_summary(&session).await?;
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
        } => {
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
            memory.forget(&session, user.as_deref()).await?;
            print(
                json,
                &json!({ "session_id": session, "forgotten": true }),
                || format!("forgot {session}"),
            )
        }
    }
}

/// How long a CLI write stays to embed what it queued. The write has committed by then;
/// this only spares a setup without a running daemon from keyword-only search.
const CLI_EMBED_BUDGET: std::time::Duration = std::time::Duration::from_secs(2);

/// Embeds queued chunks briefly before the process exits; what is left (or fails) stays
/// queued for the daemon.
async fn settle_embeddings(memory: &nightshift::memory::Memory) {
    if let Err(err) = memory.embed_queued_within(CLI_EMBED_BUDGET).await {
        tracing::warn!(%err, "embedding left to the daemon");
    }
}

async fn append(memory: &nightshift::memory::Memory, args: AppendArgs, json: bool) -> Result<()> {
    let sequences = match (args.file, args.role, args.text) {
        (Some(path), _, _) => {
            let bytes = if path.as_os_str() == "-" {
                let mut bytes = Vec::new();
                std::io::stdin()
                    .read_to_end(&mut bytes)
                    .context("cannot read standard input")?;
                bytes
            } else {
                std::fs::read(&path).with_context(|| format!("cannot read {}", path.display()))?
            };
            memory
                .append_jsonl(&args.user, &args.session, &bytes)
                .await
                .with_context(|| format!("{} not appended", path.display()))?
        }
        (None, Some(role), Some(text)) => {
            let event = NewEvent::new(role.parse()?, text_arg(text)?);
            memory.append(&args.user, &args.session, &[event]).await?
        }
        _ => anyhow::bail!("give --role and TEXT, or --file"),
    };
    settle_embeddings(memory).await;
    print(
        json,
        &json!({ "session_id": args.session, "sequences": sequences }),
        || format!("appended {} event(s) to {}", sequences.len(), args.session),
    )
}
