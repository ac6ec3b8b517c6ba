//! The records memory stores and returns.

use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::MemoryError;

/// Who produced an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
    Tool,
    System,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
            Role::System => "system",
        }
    }

    /// What an event is worth remembering when the caller does not say.
    pub fn default_importance(self) -> f64 {
        match self {
            Role::User | Role::Assistant => 0.5,
            Role::Tool => 0.3,
            Role::System => 0.1,
        }
    }
}

impl FromStr for Role {
    type Err = MemoryError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "user" => Ok(Role::User),
            "assistant" => Ok(Role::Assistant),
            "tool" => Ok(Role::Tool),
            "system" => Ok(Role::System),
            other => Err(MemoryError::invalid(
                "role",
                format!("`{other}` is not one of user, assistant, tool, system"),
            )),
        }
    }
}

/// What a session holds, read from its id's prefix so the kind can never disagree with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum SessionKind {
    /// A conversation with the agent.
    Conversation,
    /// `memory:{user_id}`: the pseudo-session that holds a user's notes in the index.
    Memory,
    /// `scheduled:{schedule_id}`: transcripts of a schedule's runs.
    Scheduled,
}

impl SessionKind {
    pub const MEMORY_PREFIX: &'static str = "memory:";
    /// `memory@HASH`: one agent's notes of a user (see [`Self::notes_session`]).
    pub const AGENT_MEMORY_PREFIX: &'static str = "memory@";
    pub const SCHEDULED_PREFIX: &'static str = "scheduled:";

    pub fn of(session_id: &str) -> Self {
        if session_id.starts_with(Self::MEMORY_PREFIX)
            || session_id.starts_with(Self::AGENT_MEMORY_PREFIX)
        {
            SessionKind::Memory
        } else if session_id.starts_with(Self::SCHEDULED_PREFIX) {
            SessionKind::Scheduled
        } else {
            SessionKind::Conversation
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            SessionKind::Conversation => "conversation",
            SessionKind::Memory => "memory",
            SessionKind::Scheduled => "scheduled",
        }
    }

    /// The pseudo-session holding a user's notes.
    pub fn memory_session(user_id: &str) -> String {
        format!("{}{user_id}", Self::MEMORY_PREFIX)
    }

    /// The pseudo-session holding a user's notes of `agent` (the shared ones when `None`).
    /// An agent's is named by a hash of the user and the agent (NUL between them, which no
    /// id holds): short whatever the ids' lengths, never another pair's, never a shared
    /// one (`memory:`), and it says nothing of the agent's name.
    pub fn notes_session(user_id: &str, agent: Option<&str>) -> String {
        match agent {
            None => Self::memory_session(user_id),
            Some(agent) => {
                let mut hasher = blake3::Hasher::new();
                hasher.update(user_id.as_bytes());
                hasher.update(b"\0");
                hasher.update(agent.as_bytes());
                let hash = hasher.finalize().to_hex();
                format!("{}{}", Self::AGENT_MEMORY_PREFIX, &hash[..32])
            }
        }
    }
}

/// An event to append.
#[derive(Debug, Clone, PartialEq, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewEvent {
    pub role: Role,
    pub content: String,
    /// Anything else the caller wants kept with the event (tool calls, channel ids…).
    #[serde(default)]
    pub payload: Option<serde_json::Value>,
    /// 0.0..=1.0; the role's default when absent.
    #[serde(default)]
    pub importance: Option<f64>,
    /// When it happened (UTC ms); now when absent. Imports keep their original times.
    #[serde(default)]
    pub created_at: Option<i64>,
    /// Who said it, when a role has more than one voice (a group chat's members, the two
    /// people of a transcript): one line, at most 256 bytes. Search prefers the turns of
    /// a speaker its query names (`search.speaker_weight`).
    #[serde(default)]
    pub name: Option<String>,
}

impl NewEvent {
    pub fn new(role: Role, content: impl Into<String>) -> Self {
        Self {
            role,
            content: content.into(),
            payload: None,
            importance: None,
            created_at: None,
            name: None,
        }
    }

    /// The same event said by `name`.
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Event {
    pub session_id: String,
    pub sequence: i64,
    pub role: Role,
    pub content: String,
    pub payload: serde_json::Value,
    pub importance: f64,
    pub created_at: i64,
    /// Who said it, when the appender named the speaker.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Session {
    pub session_id: String,
    pub user_id: String,
    pub kind: SessionKind,
    pub title: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
    pub last_sequence: i64,
}

/// A note to save.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NewNote {
    pub content: String,
    pub tags: Vec<String>,
    /// With a key, saving again under the same key replaces that note (same id).
    pub key: Option<String>,
    pub category: Option<String>,
    /// Who wrote it: `tool` (the default: the CLI or the agent) or `consolidation`.
    pub source: Option<String>,
    /// For extracted facts: what the fact is about, e.g. `preference:coffee`.
    pub fact_key: Option<String>,
    /// When it stops being returned (UTC ms).
    pub expires_at: Option<i64>,
}

impl NewNote {
    pub fn new(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            ..Self::default()
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Note {
    pub note_id: String,
    pub user_id: String,
    pub content: String,
    pub tags: Vec<String>,
    pub key: Option<String>,
    pub category: Option<String>,
    pub source: String,
    pub fact_key: Option<String>,
    pub superseded_by: Option<String>,
    /// The agent the note belongs to; absent for a note shared by all the user's agents.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct SaveOutcome {
    pub note_id: String,
    /// False when a note with the same key was replaced.
    pub created: bool,
}

/// What deleting a note answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct NoteDeleted {
    pub note_id: String,
    pub deleted: bool,
}

/// What appending to a session answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct AppendedEvents {
    pub session_id: String,
    /// The sequence each event was given, in order.
    pub sequences: Vec<i64>,
}

/// What forgetting a session answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct SessionForgotten {
    pub session_id: String,
    pub forgotten: bool,
}
