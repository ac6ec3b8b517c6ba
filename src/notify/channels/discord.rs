//! Discord's webhooks (`POST https://discord.com/api/webhooks/ID/TOKEN`): one embed with
//! the summary as its title (linking to the run), the output as its description, a colour
//! by outcome, within Discord's limits (title 256, description 4,096 characters). Nothing
//! the model wrote may ping anyone (`allowed_mentions` parses none), nor pass a link of its
//! own for the message's (a Markdown `[text](url)` is shown as text).

use serde_json::{json, Value};

use super::card::{cut, no_masked_links, Card};

const TITLE_LIMIT: usize = 256;
const DESCRIPTION_LIMIT: usize = 4096;
const GREEN: u32 = 0x2E_B6_7D;
const RED: u32 = 0xE0_1E_5A;

/// The request body for `card`.
pub fn body(card: &Card) -> Value {
    let mut embed = json!({
        "title": cut(&card.title, TITLE_LIMIT),
        "color": if card.failed { RED } else { GREEN },
    });
    if !card.body.is_empty() {
        // Cut first: the escapes must not push it past the limit.
        let text = cut(
            &card.body,
            DESCRIPTION_LIMIT
                - card
                    .body
                    .matches(['[', ']'])
                    .count()
                    .min(DESCRIPTION_LIMIT / 2),
        );
        embed["description"] = json!(no_masked_links(&text));
    }
    if let Some(url) = &card.url {
        embed["url"] = json!(url);
    }
    json!({
        "embeds": [embed],
        "allowed_mentions": {"parse": []},
    })
}

/// The webhook URL, posting into thread `context` when one is given.
pub fn url(base: &str, context: Option<&str>) -> String {
    match context {
        Some(thread) => {
            let joiner = if base.contains('?') { '&' } else { '?' };
            format!("{base}{joiner}thread_id={thread}")
        }
        None => base.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_output_is_cut_to_discords_limits_and_mentions_are_off() {
        let card = Card {
            title: "t".repeat(300),
            body: "@everyone ".repeat(1000),
            url: Some("https://ns.example.org/ui/runs/run_1".into()),
            failed: true,
        };
        let body = body(&card);
        let embed = &body["embeds"][0];
        assert_eq!(embed["title"].as_str().unwrap().chars().count(), 256);
        assert_eq!(embed["description"].as_str().unwrap().chars().count(), 4096);
        assert_eq!(embed["color"], RED);
        assert_eq!(embed["url"], "https://ns.example.org/ui/runs/run_1");
        assert_eq!(body["allowed_mentions"]["parse"], json!([]));
        assert_eq!(
            url("https://discord.com/api/webhooks/1/t", Some("42")),
            "https://discord.com/api/webhooks/1/t?thread_id=42"
        );
    }
}
