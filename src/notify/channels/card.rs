//! A message as the chat and push services show one: a title, a body and a link, and
//! whether it tells of a failure (for a colour, a priority, a type). Each service's
//! adapter cuts these to its own limits.

use serde_json::Value;

use super::render_text;
use crate::notify::outbox::Message;
use crate::text::truncate_chars;

#[derive(Debug, Clone, PartialEq)]
pub struct Card {
    pub title: String,
    /// The output, then the run's files: what follows the title in [`render_text`].
    pub body: String,
    /// The run's page, when the API's public address is configured.
    pub url: Option<String>,
    pub failed: bool,
}

impl Card {
    pub fn of(message: &Message) -> Self {
        let payload = &message.payload;
        let title = payload["summary"]
            .as_str()
            .filter(|s| !s.trim().is_empty())
            .unwrap_or("nightshift")
            .replace(['\r', '\n'], " ");
        // The text without its first line (the summary) and without the link, which each
        // service shows its own way.
        let mut without_link = payload.clone();
        without_link["run_url"] = Value::Null;
        let text = render_text(&without_link);
        let body = text
            .strip_prefix(payload["summary"].as_str().unwrap_or_default())
            .unwrap_or(&text)
            .trim()
            .to_string();
        Self {
            title,
            body,
            url: payload["run_url"].as_str().map(str::to_string),
            failed: message.priority == "high",
        }
    }
}

/// What `make` builds with the most characters, from `chars` halving down, whose JSON is
/// at most `max_bytes` (a service's limit is in bytes; text grows when escaped or when
/// its characters are wide).
pub fn fitting(chars: usize, max_bytes: usize, make: impl Fn(usize) -> Value) -> Value {
    let mut chars = chars;
    loop {
        let value = make(chars);
        let fits = serde_json::to_vec(&value).is_ok_and(|bytes| bytes.len() <= max_bytes);
        if fits || chars == 0 {
            return value;
        }
        chars /= 2;
    }
}

/// `text` with what would make a link of it in Markdown (`[shown](target)`) escaped: a
/// model's output cannot dress a link of its own as the message's.
pub fn no_masked_links(text: &str) -> String {
    text.replace('[', "\\[").replace(']', "\\]")
}

/// `text` cut to `max` characters, ending in `…` when cut.
pub fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    format!("{}…", truncate_chars(text, max.saturating_sub(1)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn a_cut_text_fits_and_keeps_its_start(text in "\\PC{0,300}", max in 1usize..200) {
            let cut = cut(&text, max);
            prop_assert!(cut.chars().count() <= max);
            let kept = cut.strip_suffix('…').unwrap_or(&cut);
            prop_assert!(text.starts_with(kept));
        }
    }
}
