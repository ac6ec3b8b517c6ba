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

    /// The kind of a session, by its id; a stored [`SessionKey`]'s text is read by the id
    /// it holds.
    pub fn of(session_id: &str) -> Self {
        let session_id = SessionKey::id_of(session_id);
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

    /// The session holding the transcripts of a schedule's runs.
    pub fn scheduled_session(schedule_id: &str) -> String {
        format!("{}{schedule_id}", Self::SCHEDULED_PREFIX)
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

/// Where a session is stored: its user and its id together, so that a session id names
/// one session *of one user*. The same id under two users is two sessions, with nothing
/// in common (events, summary, state, artifacts, index); a user can only ever name their
/// own, and no answer can tell that an id is used by someone else.
///
/// Every table that refers to a session (`sessions`, `events`, `session_state`,
/// `chunks`, `chunk_vectors`, the index blocks, session `state_entries`, `artifacts`,
/// `macro_cursors`) holds this key in its `session_id` column: the user's id, U+001F (a
/// control character, which no user or session id may hold, so the key is never another
/// pair's and splits back unambiguously), then the session's id. Doors take and answer
/// session ids; the key is made from the acting user where an id comes in, and read back
/// to the id where one goes out.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SessionKey(String);

impl SessionKey {
    /// Between the user's id and the session's in a key.
    pub const SEPARATOR: char = '\u{1f}';

    /// The key of `user_id`'s session `session_id` (both checked by the caller).
    pub fn new(user_id: &str, session_id: &str) -> Self {
        Self(format!("{user_id}{}{session_id}", Self::SEPARATOR))
    }

    /// A key as read from a `session_id` column.
    pub fn stored(key: String) -> Self {
        Self(key)
    }

    /// The key as stored.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The user the session belongs to.
    pub fn user_id(&self) -> &str {
        self.0
            .split_once(Self::SEPARATOR)
            .map_or("", |(user_id, _)| user_id)
    }

    /// The session's id, as its user names it.
    pub fn session_id(&self) -> &str {
        Self::id_of(&self.0)
    }

    /// The session id in a stored key (a text that is no key is taken as an id).
    pub fn id_of(key: &str) -> &str {
        key.split_once(Self::SEPARATOR)
            .map_or(key, |(_, session_id)| session_id)
    }
}

impl std::fmt::Display for SessionKey {
    /// `SESSION (user USER)`: for logs and the operator's messages.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (user {})", self.session_id(), self.user_id())
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

impl Session {
    /// Where the session is stored.
    pub fn key(&self) -> SessionKey {
        SessionKey::new(&self.user_id, &self.session_id)
    }
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
