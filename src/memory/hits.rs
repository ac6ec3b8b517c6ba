//! What a search is asked and what it answers: the request, its hits and the response
//! every front door returns. Apart from the search itself, so that the stages after it
//! (speakers, rerank, multi-hop) read hits without importing search.

use serde::Serialize;

use super::{EventWindow, NoteFilter};

#[derive(Debug, Clone, Default)]
pub struct SearchRequest {
    pub user_id: String,
    pub query: String,
    /// Hits to return; the configured default when `None`.
    pub top_k: Option<usize>,
    /// Also search this conversation session (it must belong to the user).
    pub session_id: Option<String>,
    /// Only notes carrying every one of these tags (conversation hits are left out); the
    /// same as `filter.tags`, kept for the callers that set it alone.
    pub tags: Vec<String>,
    /// Only notes passing this filter; any condition in it leaves conversation hits out.
    pub filter: NoteFilter,
    /// Only conversation events that happened in this window (notes are not affected).
    pub window: EventWindow,
    /// Search the notes as they were at this instant (UTC ms): the versions valid then,
    /// by keywords. Not combined with a session, note filters or a window.
    pub as_of: Option<i64>,
    /// The instant the query's relative time words ("last week", "yesterday") are read
    /// from (UTC ms): when a conversation is replayed, the time it was asked. Now when
    /// absent.
    pub asked_at: Option<i64>,
    /// The zone the query's days and months are read in; the user's (`[users.U]
    /// timezone`, else UTC) when absent.
    pub time_zone: Option<chrono_tz::Tz>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum HitSource {
    Note,
    Conversation,
}

#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct SearchHit {
    pub text: String,
    pub score: f64,
    pub source: HitSource,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tags: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sequence: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<super::Role>,
    /// Who said an event, when its appender named the speaker.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// When the note was last written or the event happened (UTC ms).
    pub at: i64,
    /// The keyword leg's score of the hit's best passage, 0 to 1 over the first stage's
    /// candidates; absent when that leg did not find it (an event found as a hit's
    /// neighbour, an `as_of` search). `score` also counts neighbours, the second stage and
    /// a second round, so it is not these two alone.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub keyword_score: Option<f64>,
    /// The vector leg's score of the hit's best passage, likewise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vector_score: Option<f64>,
}

/// A search's hits and whether it ran on the keyword leg alone.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchResults {
    pub hits: Vec<SearchHit>,
    /// Why the vector leg was left out (stored vectors of another model, or a re-embed
    /// in progress); `None` when both legs ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub degraded: Option<String>,
}

/// A search as every front door answers it: the hits, and whether (and why) the vector
/// leg was left out.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct SearchResponse {
    pub hits: Vec<SearchHit>,
    pub degraded: bool,
    pub degraded_reason: Option<String>,
}

impl From<SearchResults> for SearchResponse {
    fn from(results: SearchResults) -> Self {
        Self {
            hits: results.hits,
            degraded: results.degraded.is_some(),
            degraded_reason: results.degraded,
        }
    }
}

impl SearchHit {
    /// The order hits are ranked in: higher score first, the newer of equal scores first.
    pub fn best_first(a: &Self, b: &Self) -> std::cmp::Ordering {
        b.score.total_cmp(&a.score).then(b.at.cmp(&a.at))
    }
}
