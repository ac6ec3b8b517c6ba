//! Long user–assistant chats (`"format": "nightshift-chats"`, made by
//! `scripts/make_chats_dev.py`): one user talking with an assistant over months, with
//! questions about what the user said, changed, prefers, asked for, and when. Each turn is
//! stored with its role (no speaker name: the two voices are the roles) and its session's
//! time; each question is asked at its own `asked_at`, so relative time words resolve as
//! they did for the user.

use std::collections::HashSet;

use chrono::DateTime;
use serde::Deserialize;

use super::{Conversation, EvalError, Question, Report};
use crate::memory::{Memory, NewEvent, Role};

/// The format name and version this reader understands.
const FORMAT: &str = "nightshift-chats";
const VERSION: u64 = 1;

/// The kinds of question the format knows.
pub const KINDS: [&str; 8] = [
    "fact",
    "update",
    "preference",
    "instruction",
    "order",
    "temporal",
    "multi-session",
    // The time before or after an event the user told of ("before I moved"):
    // `make_chats_dev.py --relative N` only.
    "relative",
];

#[derive(Deserialize)]
struct File {
    format: String,
    version: u64,
    chats: Vec<Chat>,
}

#[derive(Deserialize)]
struct Chat {
    id: String,
    sessions: Vec<Session>,
    questions: Vec<FileQuestion>,
}

#[derive(Deserialize)]
struct Session {
    date: String,
    turns: Vec<Turn>,
}

#[derive(Deserialize)]
struct Turn {
    id: String,
    role: String,
    text: String,
}

#[derive(Deserialize)]
struct FileQuestion {
    question: String,
    kind: String,
    evidence: Vec<String>,
    asked_at: String,
}

/// RFC 3339 as UTC milliseconds.
fn instant(what: &str, text: &str) -> Result<i64, EvalError> {
    DateTime::parse_from_rfc3339(text)
        .map(|t| t.timestamp_millis())
        .map_err(|e| EvalError::Format(format!("{what}: `{text}` is not an RFC 3339 time: {e}")))
}

/// The chats of a `nightshift-chats` file, each as the user `chats-ID`. A turn a second
/// apart from the one before it, from its session's date, so the store keeps their order
/// in time as well as in sequence.
pub fn parse(text: &str) -> Result<Vec<Conversation>, EvalError> {
    let file: File = serde_json::from_str(text).map_err(|e| EvalError::Json(e.to_string()))?;
    if file.format != FORMAT || file.version != VERSION {
        return Err(EvalError::Format(format!(
            "expected format `{FORMAT}` version {VERSION}, got `{}` version {}",
            file.format, file.version
        )));
    }
    let mut out = Vec::with_capacity(file.chats.len());
    for chat in file.chats {
        let where_ = |what: String| format!("chat {}: {what}", chat.id);
        let mut turns = Vec::new();
        let mut user_turns = HashSet::new();
        let mut last_date = i64::MIN;
        for (n, session) in chat.sessions.iter().enumerate() {
            let date = instant(&where_(format!("session {}", n + 1)), &session.date)?;
            if date <= last_date {
                return Err(EvalError::Format(where_(format!(
                    "session {} is not after the session before it",
                    n + 1
                ))));
            }
            for (i, turn) in session.turns.iter().enumerate() {
                let role = match turn.role.as_str() {
                    "user" => Role::User,
                    "assistant" => Role::Assistant,
                    other => {
                        return Err(EvalError::Format(where_(format!(
                            "turn {}: role `{other}` is neither user nor assistant",
                            turn.id
                        ))))
                    }
                };
                if role == Role::User {
                    user_turns.insert(turn.id.clone());
                }
                let mut event = NewEvent::new(role, turn.text.clone());
                let at = date.saturating_add(i as i64 * 1000);
                event.created_at = Some(at);
                last_date = at;
                event.payload = Some(serde_json::json!({"turn": turn.id}));
                turns.push((turn.id.clone(), event));
            }
            last_date = last_date.max(date);
        }
        let mut questions = Vec::with_capacity(chat.questions.len());
        for q in chat.questions {
            if !KINDS.contains(&q.kind.as_str()) {
                return Err(EvalError::Format(where_(format!(
                    "question `{}`: kind `{}` is not one of {}",
                    q.question,
                    q.kind,
                    KINDS.join(", ")
                ))));
            }
            if let Some(missing) = q.evidence.iter().find(|id| !user_turns.contains(*id)) {
                return Err(EvalError::Format(where_(format!(
                    "question `{}`: evidence `{missing}` is not a user turn of this chat",
                    q.question
                ))));
            }
            let asked_at = instant(&where_(format!("question `{}`", q.question)), &q.asked_at)?;
            questions.push(Question {
                text: q.question,
                kind: q.kind,
                evidence: q.evidence,
                asked_at: Some(asked_at),
            });
        }
        out.push(Conversation {
            user: format!("chats-{}", chat.id),
            turns,
            questions,
        });
    }
    Ok(out)
}

/// Runs the evaluation of a chats file on `memory` (use a scratch database) for each k in
/// `ks`.
pub async fn evaluate(memory: &Memory, json: &str, ks: &[usize]) -> Result<Report, EvalError> {
    super::evaluate(memory, &parse(json)?, ks).await
}
