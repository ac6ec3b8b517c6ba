//! What a verified delivery asks for: a run with an input made from its body (and, for
//! the senders that put it there, the delivery's id: Stripe's event `id`, Slack's
//! `event_id` or `trigger_id`), or one of the handshakes a sender makes before it sends
//! events (Slack's URL check, GitHub's ping), which start nothing.

use std::collections::BTreeMap;

use axum::http::{header, HeaderMap};
use serde_json::{Map, Value};

use super::SourceError;
use crate::config::SourceVerify;
use crate::schedule::store::MAX_TRIGGER_INPUT_BYTES;

/// What a delivery asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Asked {
    /// Runs, each given this input; `delivery_id` names the delivery when its body does.
    Run {
        input: String,
        delivery_id: Option<String>,
    },
    /// Slack's URL check: answer its challenge, start nothing.
    Challenge(String),
    /// GitHub's ping when a hook is made: start nothing.
    Ping,
}

/// Reads a verified delivery of `body` for a source whose `fields` make the input.
pub fn read(
    scheme: SourceVerify,
    headers: &HeaderMap,
    body: &[u8],
    fields: &BTreeMap<String, String>,
) -> Result<Asked, SourceError> {
    let document = document(headers, body);
    if scheme == SourceVerify::Github
        && headers.get("x-github-event").and_then(|v| v.to_str().ok()) == Some("ping")
    {
        return Ok(Asked::Ping);
    }
    if scheme == SourceVerify::Slack {
        if let Some(doc) = &document {
            if doc.get("type").and_then(Value::as_str) == Some("url_verification") {
                let challenge = doc
                    .get("challenge")
                    .and_then(Value::as_str)
                    .ok_or_else(|| SourceError::bad_input("url_verification has no challenge"))?;
                return Ok(Asked::Challenge(challenge.to_string()));
            }
        }
    }
    let input = if fields.is_empty() {
        std::str::from_utf8(body)
            .map_err(|_| SourceError::bad_input("the body is not UTF-8 text"))?
            .to_string()
    } else {
        let Some(doc) = &document else {
            return Err(SourceError::bad_input(
                "the body is neither JSON nor a form, and the source's fields read one",
            ));
        };
        let picked: Map<String, Value> = fields
            .iter()
            .map(|(name, pointer)| {
                (
                    name.clone(),
                    doc.pointer(pointer).cloned().unwrap_or(Value::Null),
                )
            })
            .collect();
        serde_json::to_string_pretty(&Value::Object(picked)).expect("a JSON value serialises")
    };
    if input.trim().is_empty() {
        return Err(SourceError::bad_input("the body is empty"));
    }
    let text_at = |pointer: &str| {
        document
            .as_ref()
            .and_then(|doc| doc.pointer(pointer))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let delivery_id = match scheme {
        SourceVerify::Stripe => text_at("/id"),
        // An event's id (the same on Slack's retries), or a command's or an
        // interaction's trigger id.
        SourceVerify::Slack => text_at("/event_id").or_else(|| text_at("/trigger_id")),
        _ => None,
    };
    if input.len() > MAX_TRIGGER_INPUT_BYTES {
        return Err(SourceError::TooLarge(format!(
            "the run's input would be {} bytes, over {MAX_TRIGGER_INPUT_BYTES}: pick the \
             parts a run needs with the source's `fields`",
            input.len()
        )));
    }
    Ok(Asked::Run { input, delivery_id })
}

/// The body as a JSON document: JSON itself, or a form's fields as an object of texts
/// (a form with a single `payload` field holding JSON — GitHub's form deliveries,
/// Slack's interactions — is that JSON).
fn document(headers: &HeaderMap, body: &[u8]) -> Option<Value> {
    let is_form = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/x-www-form-urlencoded"));
    if !is_form {
        return serde_json::from_slice(body).ok();
    }
    let mut form = Map::new();
    for (key, value) in form_urlencoded::parse(body) {
        form.entry(key.into_owned())
            .or_insert(Value::String(value.into_owned()));
    }
    if form.len() == 1 {
        if let Some(Value::String(payload)) = form.get("payload") {
            if let Ok(inner) = serde_json::from_str::<Value>(payload) {
                return Some(inner);
            }
        }
    }
    Some(Value::Object(form))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn fields(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn fields_pick_values_and_a_missing_one_is_null() {
        let body = br#"{"repository":{"full_name":"o/r"},"head_commit":{"message":"fix"}}"#;
        let asked = read(
            SourceVerify::Github,
            &HeaderMap::new(),
            body,
            &fields(&[
                ("repo", "/repository/full_name"),
                ("message", "/head_commit/message"),
                ("pusher", "/pusher/name"),
            ]),
        )
        .unwrap();
        let Asked::Run { input, .. } = asked else {
            panic!("{asked:?}")
        };
        let value: Value = serde_json::from_str(&input).unwrap();
        assert_eq!(
            value,
            serde_json::json!({"repo": "o/r", "message": "fix", "pusher": null})
        );
    }

    #[test]
    fn a_form_is_read_as_its_fields_and_a_payload_form_as_its_json() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/x-www-form-urlencoded"),
        );
        let asked = read(
            SourceVerify::Slack,
            &headers,
            b"command=%2Fdeploy&text=prod+now",
            &fields(&[("text", "/text")]),
        )
        .unwrap();
        assert_eq!(
            asked,
            Asked::Run {
                input: "{\n  \"text\": \"prod now\"\n}".into(),
                delivery_id: None,
            }
        );
        let asked = read(
            SourceVerify::Github,
            &headers,
            b"payload=%7B%22action%22%3A%22opened%22%7D",
            &fields(&[("action", "/action")]),
        )
        .unwrap();
        assert_eq!(
            asked,
            Asked::Run {
                input: "{\n  \"action\": \"opened\"\n}".into(),
                delivery_id: None,
            }
        );
        // A Slack interaction: its trigger id is inside the form's JSON payload.
        let asked = read(
            SourceVerify::Slack,
            &headers,
            b"payload=%7B%22type%22%3A%22block_actions%22%2C%22trigger_id%22%3A%2213345.98%22%7D",
            &fields(&[("type", "/type")]),
        )
        .unwrap();
        assert!(
            matches!(&asked, Asked::Run { delivery_id: Some(id), .. } if id == "13345.98"),
            "{asked:?}"
        );
    }

    #[test]
    fn handshakes_start_nothing() {
        let mut headers = HeaderMap::new();
        headers.insert("x-github-event", HeaderValue::from_static("ping"));
        assert_eq!(
            read(SourceVerify::Github, &headers, b"{}", &BTreeMap::new()).unwrap(),
            Asked::Ping
        );
        let body = br#"{"type":"url_verification","challenge":"3eZbrw1aB"}"#;
        assert_eq!(
            read(
                SourceVerify::Slack,
                &HeaderMap::new(),
                body,
                &BTreeMap::new()
            )
            .unwrap(),
            Asked::Challenge("3eZbrw1aB".into())
        );
        // Only Slack's scheme answers a challenge: another sender's body is an input.
        assert!(matches!(
            read(
                SourceVerify::Bearer,
                &HeaderMap::new(),
                body,
                &BTreeMap::new()
            )
            .unwrap(),
            Asked::Run { .. }
        ));
    }

    #[test]
    fn bad_bodies_are_refused_by_name() {
        let none = BTreeMap::new();
        let h = HeaderMap::new();
        assert!(matches!(
            read(SourceVerify::Bearer, &h, b"\xff\xfe", &none),
            Err(SourceError::BadInput(_))
        ));
        assert!(matches!(
            read(SourceVerify::Bearer, &h, b"  ", &none),
            Err(SourceError::BadInput(_))
        ));
        assert!(matches!(
            read(
                SourceVerify::Bearer,
                &h,
                b"not json",
                &fields(&[("a", "/a")])
            ),
            Err(SourceError::BadInput(_))
        ));
        let big = vec![b'x'; MAX_TRIGGER_INPUT_BYTES + 1];
        assert!(matches!(
            read(SourceVerify::Bearer, &h, &big, &none),
            Err(SourceError::TooLarge(_))
        ));
    }
}
