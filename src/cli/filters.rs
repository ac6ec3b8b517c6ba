//! The filter flags of `memory search`, `memory notes` and `memory recall`, and their
//! reading into the library's filters (which check them).

use clap::Args;
use nightshift::input::InputError;
use nightshift::memory::{parse_time_opt, EventWindow, NoteFilter};

/// Which notes: every flag narrows. Instants are RFC 3339, UTC milliseconds, or a date
/// (UTC; its first moment for `--*-after`, its last for `--*-before`); bounds are
/// inclusive.
#[derive(Debug, Clone, Default, Args)]
pub struct NoteFilterArgs {
    /// Only notes with this tag (repeatable: all must match).
    #[arg(long = "tag", value_name = "TAG")]
    pub tags: Vec<String>,
    /// Only notes with at least one of these tags (repeatable).
    #[arg(long = "any-tag", value_name = "TAG")]
    pub any_tags: Vec<String>,
    /// Only notes with none of these tags (repeatable).
    #[arg(long = "no-tag", value_name = "TAG")]
    pub no_tags: Vec<String>,
    /// Only notes of exactly this category.
    #[arg(long)]
    pub category: Option<String>,
    /// Only notes whose key starts with exactly this text.
    #[arg(long, value_name = "PREFIX")]
    pub key_prefix: Option<String>,
    /// Only notes of this source: `tool` (saved by a user or an agent) or `consolidation`
    /// (facts learned from conversations).
    #[arg(long)]
    pub source: Option<String>,
    /// Only notes created at or after this instant.
    #[arg(long, value_name = "TIME")]
    pub created_after: Option<String>,
    /// Only notes created at or before this instant.
    #[arg(long, value_name = "TIME")]
    pub created_before: Option<String>,
    /// Only notes last changed at or after this instant.
    #[arg(long, value_name = "TIME")]
    pub updated_after: Option<String>,
    /// Only notes last changed at or before this instant.
    #[arg(long, value_name = "TIME")]
    pub updated_before: Option<String>,
}

/// A past moment to answer for.
#[derive(Debug, Clone, Default, Args)]
pub struct AsOfArgs {
    /// Answer with the notes as they were at this instant (a date means its last moment):
    /// the versions valid then. Search then uses keywords only; no other filter applies.
    #[arg(long, value_name = "TIME")]
    pub as_of: Option<String>,
}

impl AsOfArgs {
    pub fn instant(&self) -> Result<Option<i64>, InputError> {
        parse_time_opt("as_of", self.as_of.as_deref(), true)
    }
}

/// Which conversation events, by when they happened (inclusive; instants as above).
#[derive(Debug, Clone, Default, Args)]
pub struct WindowArgs {
    /// Only events at or after this instant.
    #[arg(long, value_name = "TIME")]
    pub since: Option<String>,
    /// Only events at or before this instant.
    #[arg(long, value_name = "TIME")]
    pub until: Option<String>,
}

impl NoteFilterArgs {
    pub fn into_filter(self) -> Result<NoteFilter, InputError> {
        Ok(NoteFilter {
            created_after: parse_time_opt("created_after", self.created_after.as_deref(), false)?,
            created_before: parse_time_opt("created_before", self.created_before.as_deref(), true)?,
            updated_after: parse_time_opt("updated_after", self.updated_after.as_deref(), false)?,
            updated_before: parse_time_opt("updated_before", self.updated_before.as_deref(), true)?,
            tags: self.tags,
            any_tags: self.any_tags,
            no_tags: self.no_tags,
            category: self.category,
            key_prefix: self.key_prefix,
            source: self.source,
        })
    }
}

impl WindowArgs {
    pub fn into_window(self) -> Result<EventWindow, InputError> {
        Ok(EventWindow {
            since: parse_time_opt("since", self.since.as_deref(), false)?,
            until: parse_time_opt("until", self.until.as_deref(), true)?,
        })
    }
}
