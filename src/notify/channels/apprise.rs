//! An Apprise API server (`POST /notify/KEY`), which passes the message on to every
//! service its configuration under KEY names (about a hundred kinds: Matrix, Signal,
//! WhatsApp, Gotify, Mattermost…); a channel context is an Apprise tag, sending only to
//! the URLs tagged with it.

use serde_json::{json, Value};

use super::card::Card;

/// Apprise answers 424 when some of the services it passes a message to failed: worth a
/// retry, unlike the other 4xx.
pub const PARTLY_FAILED: u16 = 424;

/// The request body for `card`, for the URLs tagged `tag` (all when none).
pub fn body(card: &Card, tag: Option<&str>) -> Value {
    let mut text = card.body.clone();
    if let Some(url) = &card.url {
        if !text.is_empty() {
            text.push_str("\n\n");
        }
        text.push_str(url);
    }
    if text.is_empty() {
        text = card.title.clone();
    }
    let mut body = json!({
        "title": card.title,
        "body": text,
        "type": if card.failed { "failure" } else { "success" },
        "format": "text",
    });
    if let Some(tag) = tag {
        body["tag"] = json!(tag);
    }
    body
}
