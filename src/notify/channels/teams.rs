//! Microsoft Teams through a Workflows webhook ("When a Teams webhook request is
//! received"): a message with one Adaptive Card — the summary in bold, the output, and a
//! button to the run. Teams refuses a message over about 28 KB, so the output is cut
//! until the card's JSON is under 24,000 bytes. A Markdown link in the output is shown as
//! text, so it cannot pass for the card's own button.

use serde_json::{json, Value};

use super::card::{cut, no_masked_links, Card};

const TEXT_LIMIT: usize = 20_000;
const MAX_BYTES: usize = 24_000;

/// The request body for `card`.
pub fn body(card: &Card) -> Value {
    super::card::fitting(TEXT_LIMIT, MAX_BYTES, |chars| body_of(card, chars))
}

fn body_of(card: &Card, chars: usize) -> Value {
    let mut blocks = vec![json!({
        "type": "TextBlock",
        "text": cut(&card.title, 500),
        "weight": "Bolder",
        "size": "Medium",
        "color": if card.failed { "Attention" } else { "Good" },
        "wrap": true,
    })];
    if !card.body.is_empty() {
        blocks.push(json!({
            "type": "TextBlock",
            "text": no_masked_links(&cut(&card.body, chars)),
            "wrap": true,
        }));
    }
    let mut content = json!({
        "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
        "type": "AdaptiveCard",
        "version": "1.4",
        "body": blocks,
    });
    if let Some(url) = &card.url {
        content["actions"] =
            json!([{"type": "Action.OpenUrl", "title": "Open the run", "url": url}]);
    }
    json!({
        "type": "message",
        "attachments": [{
            "contentType": "application/vnd.microsoft.card.adaptive",
            "contentUrl": null,
            "content": content,
        }],
    })
}
