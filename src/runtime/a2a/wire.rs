//! The A2A wire: agent cards, tasks and parts of protocol 1.0 and 0.3 alike, read into
//! what the runtime needs; and a finished task's parts turned into the run's output and
//! artifacts.

use serde_json::{Map, Value};

use super::{Dialect, Endpoint};
use crate::artifact::NewArtifact;
use crate::runtime::GoalOutcome;

/// Characters of an agent's reason or question kept in a run's error.
const REASON_CHARS: usize = 500;
/// Longest task id taken (it is named in errors and sent back in every poll).
const MAX_ID_BYTES: usize = 1024;

/// The endpoint an agent card names: its JSON-RPC interface of protocol 1.x, else 0.x.
/// A 1.0 card lists `supportedInterfaces`; a 0.3 card has `url`, `preferredTransport`,
/// `protocolVersion` and `additionalInterfaces`.
pub(super) fn pick_interface(card_url: &str, card: &Value) -> Result<Endpoint, String> {
    let Some(card) = card.as_object() else {
        return Err("not a JSON object".into());
    };
    let text =
        |o: &Map<String, Value>, key: &str| o.get(key).and_then(Value::as_str).map(str::to_string);
    // (url, binding, version)
    let mut offered: Vec<(String, String, String)> = Vec::new();
    if let Some(list) = card.get("supportedInterfaces") {
        let Some(list) = list.as_array() else {
            return Err("`supportedInterfaces` is not a list".into());
        };
        for iface in list.iter().filter_map(Value::as_object) {
            if let Some(url) = text(iface, "url") {
                offered.push((
                    url,
                    text(iface, "protocolBinding").unwrap_or_default(),
                    text(iface, "protocolVersion").unwrap_or_else(|| "1.0".into()),
                ));
            }
        }
    } else if let Some(url) = text(card, "url") {
        let version = text(card, "protocolVersion").unwrap_or_else(|| "0.3".into());
        offered.push((
            url,
            text(card, "preferredTransport").unwrap_or_else(|| "JSONRPC".into()),
            version.clone(),
        ));
        for iface in card
            .get("additionalInterfaces")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_object)
        {
            if let Some(url) = text(iface, "url") {
                offered.push((
                    url,
                    text(iface, "transport").unwrap_or_default(),
                    version.clone(),
                ));
            }
        }
    }
    let major = |version: &str| version.split('.').next()?.trim().parse::<u32>().ok();
    let jsonrpc = |binding: &str| binding.eq_ignore_ascii_case("JSONRPC");
    let pick = |want: u32| {
        offered
            .iter()
            .find(|(_, binding, version)| jsonrpc(binding) && major(version) == Some(want))
    };
    let Some((url, _, version)) = pick(1).or_else(|| pick(0)) else {
        let listed: Vec<String> = offered
            .iter()
            .map(|(_, binding, version)| {
                format!(
                    "{} {}",
                    crate::input::printable(crate::text::truncate_chars(binding, 40)),
                    crate::input::printable(crate::text::truncate_chars(version, 20))
                )
            })
            .collect();
        return Err(format!(
            "offers no JSON-RPC interface of protocol 1.x or 0.x (it offers: {})",
            if listed.is_empty() {
                "none".to_string()
            } else {
                listed.join(", ")
            }
        ));
    };
    let base = reqwest::Url::parse(card_url).map_err(|e| e.to_string())?;
    let url = base
        .join(url)
        .map_err(|e| format!("interface url is not a URL: {e}"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!(
            "interface url `{}` is not http:// or https://",
            crate::input::printable(crate::text::truncate_chars(url.as_str(), 200))
        ));
    }
    Ok(Endpoint {
        url: url.to_string(),
        dialect: if major(version) == Some(1) {
            Dialect::V1
        } else {
            Dialect::V03
        },
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum State {
    Submitted,
    Working,
    InputRequired,
    AuthRequired,
    Completed,
    Failed,
    Canceled,
    Rejected,
}

impl State {
    /// 1.0's `TASK_STATE_INPUT_REQUIRED` and 0.3's `input-required` alike.
    pub(super) fn parse(text: &str) -> Option<State> {
        let name = text
            .strip_prefix("TASK_STATE_")
            .map(|s| s.to_ascii_lowercase().replace('_', "-"))
            .unwrap_or_else(|| text.to_string());
        Some(match name.as_str() {
            "submitted" => State::Submitted,
            "working" => State::Working,
            "input-required" => State::InputRequired,
            "auth-required" => State::AuthRequired,
            "completed" => State::Completed,
            "failed" => State::Failed,
            "canceled" | "cancelled" => State::Canceled,
            "rejected" => State::Rejected,
            _ => return None,
        })
    }

    pub(super) fn name(self) -> &'static str {
        match self {
            State::Submitted => "submitted",
            State::Working => "working",
            State::InputRequired => "input-required",
            State::AuthRequired => "auth-required",
            State::Completed => "completed",
            State::Failed => "failed",
            State::Canceled => "canceled",
            State::Rejected => "rejected",
        }
    }
}

/// What nightshift reads of a task.
pub(super) struct Task {
    pub(super) id: String,
    pub(super) state: State,
    /// The text of the status message: a failure's reason, an agent's question.
    pub(super) status_text: String,
    pub(super) artifacts: Vec<Artifact>,
    /// The text of the last agent message in the history sent along, if any.
    pub(super) agent_text: String,
}

pub(super) struct Artifact {
    pub(super) name: Option<String>,
    pub(super) parts: Vec<Part>,
}

pub(super) enum Part {
    Text {
        text: String,
        mime: Option<String>,
    },
    /// Inline content; `Err` when it was not base64.
    File {
        name: Option<String>,
        mime: Option<String>,
        content: Result<Vec<u8>, String>,
    },
    /// A file the agent keeps elsewhere: named in the output, not fetched.
    Link {
        name: Option<String>,
        url: String,
    },
    Data(Value),
}

pub(super) fn parse_task(value: &Value) -> Result<Task, String> {
    let Some(task) = value.as_object() else {
        return Err("the task is not a JSON object".into());
    };
    let id = match task.get("id").and_then(Value::as_str) {
        Some(id) if id.len() > MAX_ID_BYTES => {
            return Err(format!("the task's `id` is over {MAX_ID_BYTES} bytes"))
        }
        Some(id) if !id.is_empty() => id.to_string(),
        _ => return Err("the task has no `id`".into()),
    };
    let status = task.get("status").and_then(Value::as_object);
    let Some(state_text) = status.and_then(|s| s.get("state")).and_then(Value::as_str) else {
        return Err(format!(
            "task `{}` has no `status.state`",
            crate::input::printable(&id)
        ));
    };
    let Some(state) = State::parse(state_text) else {
        return Err(format!(
            "task `{}` is in state `{}`, which is not one nightshift can follow",
            crate::input::printable(&id),
            crate::input::printable(crate::text::truncate_chars(state_text, 60))
        ));
    };
    let status_text = match status.and_then(|s| s.get("message")) {
        Some(message) => texts_of(&parse_parts(message.get("parts"))?),
        None => String::new(),
    };
    let mut artifacts = Vec::new();
    match task.get("artifacts") {
        None | Some(Value::Null) => {}
        Some(Value::Array(list)) => {
            for artifact in list {
                artifacts.push(Artifact {
                    name: artifact
                        .get("name")
                        .and_then(Value::as_str)
                        .map(str::to_string),
                    parts: parse_parts(artifact.get("parts"))?,
                });
            }
        }
        Some(_) => return Err("the task's `artifacts` is not a list".into()),
    }
    let mut agent_text = String::new();
    if let Some(Value::Array(history)) = task.get("history") {
        let from_agent = |m: &&Value| {
            matches!(
                m.get("role").and_then(Value::as_str),
                Some("ROLE_AGENT" | "agent")
            )
        };
        if let Some(last) = history.iter().rev().find(from_agent) {
            agent_text = texts_of(&parse_parts(last.get("parts"))?);
        }
    }
    Ok(Task {
        id,
        state,
        status_text,
        artifacts,
        agent_text,
    })
}

/// Parts of either version: 1.0's `text`, `raw`, `url`, `data`, or 0.3's `kind`ed text,
/// file (`bytes` or `uri`) and data parts. A part of neither shape is left out.
pub(super) fn parse_parts(parts: Option<&Value>) -> Result<Vec<Part>, String> {
    let list = match parts {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(list)) => list,
        Some(_) => return Err("`parts` is not a list".into()),
    };
    let text =
        |o: &Map<String, Value>, key: &str| o.get(key).and_then(Value::as_str).map(str::to_string);
    let decode = |b64: &str| {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD
            .decode(b64.trim())
            .map_err(|e| format!("not base64: {e}"))
    };
    let mut out = Vec::new();
    for part in list.iter().filter_map(Value::as_object) {
        if let Some(t) = text(part, "text") {
            out.push(Part::Text {
                text: t,
                mime: text(part, "mediaType"),
            });
        } else if let Some(raw) = part.get("raw").and_then(Value::as_str) {
            out.push(Part::File {
                name: text(part, "filename"),
                mime: text(part, "mediaType"),
                content: decode(raw),
            });
        } else if let Some(url) = text(part, "url") {
            out.push(Part::Link {
                name: text(part, "filename"),
                url,
            });
        } else if let Some(file) = part.get("file").and_then(Value::as_object) {
            let name = text(file, "name");
            if let Some(bytes) = file.get("bytes").and_then(Value::as_str) {
                out.push(Part::File {
                    name,
                    mime: text(file, "mimeType"),
                    content: decode(bytes),
                });
            } else if let Some(uri) = text(file, "uri") {
                out.push(Part::Link { name, url: uri });
            }
        } else if let Some(data) = part.get("data") {
            out.push(Part::Data(data.clone()));
        }
    }
    Ok(out)
}

pub(super) fn texts_of(parts: &[Part]) -> String {
    let texts: Vec<&str> = parts
        .iter()
        .filter_map(|p| match p {
            Part::Text { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    texts.join("\n")
}

/// An agent's text as a one-paragraph reason in a run's error.
pub(super) fn reason(text: &str) -> String {
    let text = crate::text::truncate_chars(text.trim(), REASON_CHARS);
    crate::input::printable(text).replace(['\n', '\r'], " ")
}

/// A name the artifact store can take (no `/`, no control characters), if one is left.
pub(super) fn clean_name(name: &str) -> Option<String> {
    let name: String = name
        .chars()
        .filter(|c| !c.is_control())
        .map(|c| if matches!(c, '/' | '\\') { '_' } else { c })
        .collect();
    let name = crate::text::truncate_chars(name.trim(), crate::artifact::MAX_NAME_CHARS).trim();
    (!name.is_empty() && name != "." && name != "..").then(|| name.to_string())
}

/// The texts of `parts` (an artifact's, when `artifact` names it) into `texts`; its files
/// and data into `outcome.artifacts` (an artifact's text too, as one text file); links and
/// unreadable files as notes in `outcome.output`.
pub(super) fn collect_parts(
    parts: &[Part],
    artifact: Option<Option<&str>>,
    index: usize,
    texts: &mut Vec<String>,
    outcome: &mut GoalOutcome,
) {
    let artifact_name = artifact.flatten().and_then(clean_name);
    let fallback = |ext: &str| format!("artifact-{}{ext}", index + 1);
    let mut own_text: Vec<&str> = Vec::new();
    let mut text_mime = None;
    let note = |outcome: &mut GoalOutcome, line: String| {
        if !outcome.output.is_empty() {
            outcome.output.push('\n');
        }
        outcome.output.push_str(&line);
    };
    for part in parts {
        match part {
            Part::Text { text, mime } => {
                texts.push(text.clone());
                own_text.push(text);
                if text_mime.is_none() {
                    text_mime.clone_from(mime);
                }
            }
            Part::File {
                name,
                mime,
                content,
            } => {
                let name = name
                    .as_deref()
                    .and_then(|n| n.rsplit(['/', '\\']).next())
                    .and_then(clean_name)
                    .or_else(|| artifact_name.clone())
                    .unwrap_or_else(|| fallback(""));
                match content {
                    Ok(content) => outcome.artifacts.push(NewArtifact {
                        name,
                        mime_type: mime
                            .clone()
                            .unwrap_or_else(|| crate::artifact::DEFAULT_MIME_TYPE.to_string()),
                        content: content.clone(),
                    }),
                    Err(e) => note(
                        outcome,
                        format!(
                            "[artifact `{}` not stored: {e}]",
                            crate::input::printable(&name)
                        ),
                    ),
                }
            }
            Part::Link { name, url } => {
                let name = name
                    .as_deref()
                    .and_then(clean_name)
                    .or_else(|| artifact_name.clone())
                    .unwrap_or_else(|| fallback(""));
                note(
                    outcome,
                    format!(
                        "[artifact `{}` is at {} (not fetched)]",
                        crate::input::printable(&name),
                        crate::input::printable(crate::text::truncate_chars(url, 2000))
                    ),
                );
            }
            Part::Data(data) => outcome.artifacts.push(NewArtifact {
                name: artifact_name.clone().unwrap_or_else(|| fallback(".json")),
                mime_type: "application/json".to_string(),
                content: serde_json::to_vec_pretty(data).unwrap_or_default(),
            }),
        }
    }
    if artifact.is_some() && !own_text.is_empty() {
        outcome.artifacts.push(NewArtifact {
            name: artifact_name.unwrap_or_else(|| fallback(".txt")),
            mime_type: text_mime.unwrap_or_else(|| "text/plain".to_string()),
            content: own_text.join("\n").into_bytes(),
        });
    }
}

/// The answer's texts, then the notes already in the output.
pub(super) fn join_texts(texts: &[String], notes: &str) -> String {
    let mut output = texts.join("\n");
    if !notes.is_empty() {
        if !output.is_empty() {
            output.push('\n');
        }
        output.push_str(notes);
    }
    output
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn states_of_both_versions() {
        assert_eq!(
            State::parse("TASK_STATE_INPUT_REQUIRED"),
            Some(State::InputRequired)
        );
        assert_eq!(State::parse("input-required"), Some(State::InputRequired));
        assert_eq!(State::parse("TASK_STATE_COMPLETED"), Some(State::Completed));
        assert_eq!(State::parse("canceled"), Some(State::Canceled));
        assert_eq!(State::parse("unknown"), None);
        assert_eq!(State::parse("TASK_STATE_UNSPECIFIED"), None);
    }

    #[test]
    fn a_card_of_either_version_names_its_jsonrpc_endpoint() {
        let v1 = json!({"supportedInterfaces": [
            {"url": "http://a/grpc", "protocolBinding": "GRPC", "protocolVersion": "1.0"},
            {"url": "http://a/old", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
            {"url": "/rpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
        ]});
        let e = pick_interface("http://a/.well-known/agent-card.json", &v1).unwrap();
        assert_eq!((e.url.as_str(), e.dialect), ("http://a/rpc", Dialect::V1));
        let v03 = json!({"url": "http://b/a2a", "protocolVersion": "0.3.0"});
        let e = pick_interface("http://b/.well-known/agent-card.json", &v03).unwrap();
        assert_eq!((e.url.as_str(), e.dialect), ("http://b/a2a", Dialect::V03));
        let grpc_only = json!({"supportedInterfaces": [
            {"url": "http://a/grpc", "protocolBinding": "GRPC", "protocolVersion": "1.0"}
        ]});
        let err = pick_interface("http://a/card.json", &grpc_only).unwrap_err();
        assert!(err.contains("GRPC 1.0"), "{err}");
        assert!(pick_interface("http://a/card.json", &json!([1])).is_err());
        let ftp = json!({"url": "ftp://b/a2a"});
        assert!(pick_interface("http://b/card.json", &ftp).is_err());
    }

    #[test]
    fn parts_of_both_versions() {
        let parts = json!([
            {"text": "hi", "mediaType": "text/markdown"},
            {"raw": "YSxi", "filename": "x.csv", "mediaType": "text/csv"},
            {"url": "https://x/y.png", "filename": "y.png"},
            {"data": {"k": 1}},
            {"kind": "text", "text": "there"},
            {"kind": "file", "file": {"bytes": "YSxi", "mimeType": "text/csv", "name": "z.csv"}},
            {"kind": "file", "file": {"uri": "https://x/z"}},
            {"kind": "data", "data": [1]},
            {"raw": "!!"},
            {"something": "else"},
        ]);
        let parts = parse_parts(Some(&parts)).unwrap();
        assert_eq!(parts.len(), 9);
        assert_eq!(texts_of(&parts), "hi\nthere");
        let mut outcome = GoalOutcome::default();
        let mut texts = Vec::new();
        collect_parts(&parts, Some(Some("out/put")), 0, &mut texts, &mut outcome);
        let names: Vec<&str> = outcome.artifacts.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(
            names,
            ["x.csv", "out_put", "z.csv", "out_put", "out_put"],
            "{outcome:?}"
        );
        assert_eq!(outcome.artifacts[0].content, b"a,b");
        assert_eq!(outcome.artifacts[4].mime_type, "text/markdown");
        assert!(outcome.output.contains("`y.png` is at https://x/y.png"));
        assert!(outcome.output.contains("not base64"));
        assert!(parse_parts(Some(&json!({"text": "x"}))).is_err());
    }

    #[test]
    fn names_are_made_storable() {
        assert_eq!(clean_name(" a/b\u{7}.txt "), Some("a_b.txt".into()));
        assert_eq!(clean_name(".."), None);
        assert_eq!(clean_name("\u{1}"), None);
    }
}
