//! A conversation event longer than `memory.max_text_bytes`, under `oversize =
//! "truncate"` or `"artifact"`: kept as its head and its tail around a marker that says
//! how much was cut, so a chat with one huge pasted turn (a log, a file) still goes in
//! whole as a conversation, and what the user wrote before and after the paste stays
//! searchable. Under `"artifact"` the whole text is kept too, as an artifact of the
//! user's in the event's session, which the marker names.

use std::borrow::Cow;

use async_trait::async_trait;

use super::{NewEvent, Result, SessionKey};
use crate::config::Oversize;
use crate::db::WriteTx;

/// Where `oversize = "artifact"` keeps a cut turn's whole text: the artifact store, which
/// the app hands to the memory store (memory does not depend on artifacts; they depend on
/// it, for sessions). The artifact's rows go in the append's own transaction, so a turn
/// and its whole text are stored together or not at all.
#[async_trait]
pub trait WholeTextKeeper: Send + Sync {
    /// Checks `text` against `user_id`'s artifact limits, counting `pending` bytes this
    /// append placed already, and writes its content where it goes before the
    /// transaction (a crash after leaves only a file no row names, which the expiry pass
    /// collects). Over a limit nothing is written.
    async fn place(&self, user_id: &str, text: &str, pending: u64) -> Result<PlacedText>;

    /// Removes what [`WholeTextKeeper::place`] wrote for an append that stored nothing
    /// (a file still named by another artifact's row stays).
    async fn release(&self, placed: &[&PlacedText]);

    /// Records placed `text` as the user's artifact in the session `key`, inside `tx`
    /// (the limits checked again there), returning its id.
    async fn record_in(
        &self,
        tx: &WriteTx,
        key: &SessionKey,
        text: &str,
        placed: &PlacedText,
    ) -> Result<String>;

    /// After the transaction committed: makes sure placed content's file is there (a
    /// delete of the same bytes elsewhere may have removed it meanwhile).
    async fn settle(&self, text: &str, placed: &PlacedText);
}

/// Where a whole text's content went: its hash, and whether it lives in the folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlacedText {
    pub hash: String,
    pub in_folder: bool,
}

/// As long as any artifact id (`art-` and a UUID): stands in for the id a marker will
/// name while an event is checked before its artifact is stored.
pub const PLACEHOLDER_ID: &str = "art-00000000-0000-0000-0000-000000000000";

/// Share of the kept bytes taken from the start (the rest from the end).
const HEAD_SHARE: f64 = 2.0 / 3.0;

/// `text` within `max` bytes: itself when it fits; otherwise its head and tail around a
/// marker, on character boundaries. `None` when `max` is too small to hold a marker and
/// some of both ends (the event is refused as too long, as without the option).
pub fn truncate_middle(text: &str, max: usize) -> Option<Cow<'_, str>> {
    cut_middle(text, max, None)
}

/// As [`truncate_middle`], the marker naming `whole`, the artifact that keeps the whole
/// text, when there is one.
pub fn cut_middle<'a>(text: &'a str, max: usize, whole: Option<&str>) -> Option<Cow<'a, str>> {
    if text.len() <= max {
        return Some(Cow::Borrowed(text));
    }
    let kept_as = whole
        .map(|id| format!("; the whole turn is artifact {id}"))
        .unwrap_or_default();
    let marker = |cut: usize| {
        format!(
            "\n\n[… {cut} bytes cut: this turn was {} bytes, over memory.max_text_bytes{kept_as} …]\n\n",
            text.len()
        )
    };
    // The marker's length with the largest count it can show.
    let room = max.checked_sub(marker(text.len()).len())?;
    let head = floor_boundary(text, (room as f64 * HEAD_SHARE) as usize);
    let tail_start = ceil_boundary(text, text.len() - (room - head));
    if head == 0 || tail_start == text.len() {
        return None;
    }
    let cut = tail_start - head;
    let kept = format!("{}{}{}", &text[..head], marker(cut), &text[tail_start..]);
    debug_assert!(kept.len() <= max);
    Some(Cow::Owned(kept))
}

/// The greatest char boundary at or before `at`.
fn floor_boundary(text: &str, at: usize) -> usize {
    (0..=at.min(text.len()))
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0)
}

/// The least char boundary at or after `at`.
fn ceil_boundary(text: &str, at: usize) -> usize {
    (at..=text.len())
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(text.len())
}

/// `events` with each one over `max` cut to fit unless `policy` is to refuse (borrowed
/// as they are when none needs it); a refused one is left for the content check to name.
/// No whole text is kept here: for a caller's transaction, which an artifact's own
/// cannot join.
pub fn fit(events: &[NewEvent], max: usize, policy: Oversize) -> Cow<'_, [NewEvent]> {
    if policy == Oversize::Refuse || events.iter().all(|e| e.content.len() <= max) {
        return Cow::Borrowed(events);
    }
    Cow::Owned(
        events
            .iter()
            .map(|event| match truncate_middle(&event.content, max) {
                Some(Cow::Owned(kept)) => NewEvent {
                    content: kept,
                    ..event.clone()
                },
                _ => event.clone(),
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Whatever the text and the limit: what is kept fits, starts with the text's
        /// head, ends with its tail, and says how much was cut; a text that fits is kept.
        #[test]
        fn a_cut_turn_fits_and_keeps_both_ends(
            text in "\\PC{0,3000}",
            max in 1usize..4000,
            named in any::<bool>(),
        ) {
            let whole = named.then_some(PLACEHOLDER_ID);
            match cut_middle(&text, max, whole) {
                Some(Cow::Borrowed(kept)) => {
                    prop_assert!(text.len() <= max);
                    prop_assert_eq!(kept, text.as_str());
                }
                Some(Cow::Owned(kept)) => {
                    prop_assert!(kept.len() <= max, "{} > {max}", kept.len());
                    let (head, rest) = kept.split_once("\n\n[… ").unwrap();
                    let (note, tail) = rest.split_once(" …]\n\n").unwrap();
                    prop_assert!(text.starts_with(head) && text.ends_with(tail));
                    prop_assert!(!head.is_empty() && !tail.is_empty());
                    let cut: usize = note.split(' ').next().unwrap().parse().unwrap();
                    prop_assert_eq!(head.len() + cut + tail.len(), text.len());
                    prop_assert_eq!(
                        note.ends_with(&format!("the whole turn is artifact {PLACEHOLDER_ID}")),
                        named
                    );
                }
                None => prop_assert!(text.len() > max && max < 250),
            }
        }
    }

    #[test]
    fn a_huge_paste_keeps_what_was_said_around_it() {
        let text = format!(
            "I prefer tea. Here is the log:\n{}\nThat's all.",
            "x".repeat(348_480)
        );
        let kept = truncate_middle(&text, 65_536).unwrap();
        assert!(kept.len() <= 65_536);
        assert!(kept.starts_with("I prefer tea."));
        assert!(kept.ends_with("That's all."));
        assert!(kept.contains("bytes cut: this turn was 348523 bytes"));
    }
}
