//! The `memory_search` tool's input: the same fields as `POST /v1/search`.

use serde::Deserialize;
use utoipa::ToSchema;

use crate::api::types::{note_filter, window};
use crate::input::InputError;
use crate::memory::SearchRequest;

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MemorySearchIn {
    /// What to look for, in natural language.
    pub query: String,
    /// Hits to return (default 5).
    pub top_k: Option<usize>,
    /// Also search this conversation session.
    pub session: Option<String>,
    /// Only notes carrying every one of these tags.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Only notes carrying at least one of these tags.
    #[serde(default)]
    pub any_tags: Vec<String>,
    /// Only notes carrying none of these tags.
    #[serde(default)]
    pub no_tags: Vec<String>,
    /// Only notes of exactly this category.
    pub category: Option<String>,
    /// Only notes whose key starts with exactly this text.
    pub key_prefix: Option<String>,
    /// Only notes of this source: `tool` (saved by a user or an agent) or `consolidation`.
    pub source: Option<String>,
    /// Only notes created at or after this instant (UTC ms, RFC 3339 or a date).
    pub created_after: Option<String>,
    /// Only notes created at or before this instant.
    pub created_before: Option<String>,
    /// Only notes last changed at or after this instant.
    pub updated_after: Option<String>,
    /// Only notes last changed at or before this instant.
    pub updated_before: Option<String>,
    /// Only conversation turns at or after this instant (notes are not affected).
    pub since: Option<String>,
    /// Only conversation turns at or before this instant.
    pub until: Option<String>,
    /// Search the notes as they were at this instant, by keywords (no other filter).
    pub as_of: Option<String>,
    /// Search as this agent of the user: its own notes and the shared ones (without: the
    /// shared notes only).
    pub agent: Option<String>,
}

impl MemorySearchIn {
    /// The library's request for `user` (its filters checked by the library).
    pub fn into_request(self, user: &str) -> Result<SearchRequest, InputError> {
        let filter = note_filter(
            [self.tags, self.any_tags, self.no_tags],
            [self.category, self.key_prefix, self.source],
            [
                self.created_after.as_deref(),
                self.created_before.as_deref(),
                self.updated_after.as_deref(),
                self.updated_before.as_deref(),
            ],
        )?;
        Ok(SearchRequest {
            user_id: user.to_string(),
            query: self.query,
            top_k: self.top_k,
            session_id: self.session,
            filter,
            window: window(self.since.as_deref(), self.until.as_deref())?,
            as_of: crate::memory::parse_time_opt("as_of", self.as_of.as_deref(), true)?,
            ..Default::default()
        })
    }
}
