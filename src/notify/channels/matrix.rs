//! Matrix through the client-server API: `PUT /_matrix/client/v3/rooms/ROOM/send/
//! m.room.message/TXN` as the bot whose access token is the channel's secret, into the
//! room the channel context names. The transaction id is the message's id, the same on
//! every retry, so a homeserver that took a send whose answer was lost keeps one event.
//! The text goes plain and as escaped HTML (the summary in bold, the run's link as a
//! link), cut until the event fits well within a homeserver's 64 KiB. `m.mentions` is
//! empty: an `@room` or a member's name in a model's output pings nobody.

use serde_json::{json, Value};

use super::card::{cut, Card};

/// Characters of the body tried first; halved until the content's JSON fits [`MAX_BYTES`].
const TEXT_LIMIT: usize = 16_000;
/// Bytes of the content's JSON at most (a homeserver refuses an event over 64 KiB with
/// its envelope; escaped HTML and multi-byte text grow, so this is counted, not guessed).
const MAX_BYTES: usize = 60_000;

/// The send URL for `room` on `base`, with transaction `txn`.
pub fn send_url(base: &str, room: &str, txn: &str) -> String {
    format!(
        "{}/_matrix/client/v3/rooms/{}/send/m.room.message/{}",
        base.trim_end_matches('/'),
        encode(room),
        encode(txn)
    )
}

/// The event's content for `card`, within [`MAX_BYTES`].
pub fn content(card: &Card) -> Value {
    super::card::fitting(TEXT_LIMIT, MAX_BYTES, |chars| content_of(card, chars))
}

fn content_of(card: &Card, chars: usize) -> Value {
    let title = cut(&card.title, 1000);
    let text = cut(&card.body, chars);
    let mut plain = title.clone();
    if !text.is_empty() {
        plain.push_str("\n\n");
        plain.push_str(&text);
    }
    if let Some(url) = &card.url {
        plain.push_str("\n\n");
        plain.push_str(url);
    }
    let html = maud::html! {
        strong { (title) }
        @if !text.is_empty() {
            br; br;
            @for (i, line) in text.lines().enumerate() {
                @if i > 0 { br; }
                (line)
            }
        }
        @if let Some(url) = &card.url {
            br; br;
            a href=(url) { "Open the run" }
        }
    };
    json!({
        // Not m.notice: clients hold notices back from notifying, and these are for a person.
        "msgtype": "m.text",
        "body": plain,
        "format": "org.matrix.custom.html",
        "formatted_body": html.into_string(),
        "m.mentions": {},
    })
}

/// Whether `room` is a room id, what the send path takes: `!` and its opaque part (with
/// `:SERVER` before room version 12).
pub fn is_room_id(room: &str) -> bool {
    (2..=255).contains(&room.len())
        && room.starts_with('!')
        && !room
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || c == '/')
}

/// Percent-encodes everything but the unreserved characters, for a path segment.
fn encode(segment: &str) -> String {
    segment
        .bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_html_is_escaped_and_the_path_encoded() {
        let card = Card {
            title: "report: <done>".into(),
            body: "line <1>\nline & 2".into(),
            url: Some("https://ns.example.org/v1/runs/r1".into()),
            failed: false,
        };
        let content = content(&card);
        let html = content["formatted_body"].as_str().unwrap();
        assert!(
            html.contains("<strong>report: &lt;done&gt;</strong>"),
            "{html}"
        );
        assert!(html.contains("line &lt;1&gt;<br>line &amp; 2"), "{html}");
        assert!(html.contains(r#"<a href="https://ns.example.org/v1/runs/r1">"#));
        assert_eq!(content["m.mentions"], serde_json::json!({}));
        // Text that grows when escaped, in characters of three bytes: still one event.
        let heavy = Card {
            body: "<&>語".repeat(20_000),
            ..card.clone()
        };
        assert!(serde_json::to_vec(&super::content(&heavy)).unwrap().len() <= MAX_BYTES);
        assert_eq!(
            send_url("https://m.example.org/", "!abc:m.example.org", "msg_1"),
            "https://m.example.org/_matrix/client/v3/rooms/%21abc%3Am.example.org/send/m.room.message/msg_1"
        );
        assert!(is_room_id("!abc:m.example.org"));
        assert!(is_room_id("!FNnHcoFZW75mP-gy8MnD001UFuuEtF2OMkeh5A8JMas"));
        for bad in ["#alias:m.org", "!", "abc:m.org", "!a b:m.org", "!a/../b:m"] {
            assert!(!is_room_id(bad), "{bad}");
        }
    }
}
