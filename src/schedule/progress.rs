//! A run's progress while it goes (migration 37): its status changes, each turn of the
//! model, each tool call and its result. The worker running it records each as it
//! happens ([`Progress`], through a [`ProgressSink`]); `GET /v1/runs/{id}/events` and the
//! dashboard's run page follow them live, and a client that lost its connection resumes
//! after the last event it saw ([`parse_last_event_id`]). The run's end is not recorded
//! here: it is read from the run itself, so a run that ends any way (a cancel while it
//! waits, recovery, a shutdown) ends its stream.

use std::sync::Arc;

use async_trait::async_trait;
use serde::Serialize;
use serde_json::{json, Value};

use crate::input::InputError;

/// The most characters of one text an event keeps (a turn's answer, a tool's arguments or
/// result): enough to follow the run, while the full text goes to the run's transcript.
pub const MAX_EVENT_TEXT_CHARS: usize = 2000;

text_enum!(
    /// What an event of a run's progress tells. `end` is the run's end, read from the run.
    ProgressKind {
        Status => "status",
        Turn => "turn",
        ToolCall => "tool_call",
        ToolResult => "tool_result",
        End => "end",
    }
);

/// One event of a run's progress, as the stream sends it (its `id` is `seq`).
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct ProgressEvent {
    /// From 1 within the run; the event's SSE id.
    pub seq: i64,
    pub kind: ProgressKind,
    /// When it happened (Unix milliseconds).
    pub at: i64,
    /// What it tells, by kind: `status` {status, attempt, error?, retry_in_secs?, tool?};
    /// `turn` {turn, text, tool_calls}; `tool_call` {name, arguments}; `tool_result`
    /// {name, result}; `end` {status, error, output_summary}.
    #[schema(value_type = Object)]
    pub data: Value,
}

impl ProgressEvent {
    /// The event in words, one line for a person following the run (the dashboard).
    pub fn describe(&self) -> String {
        let d = &self.data;
        let text = |key: &str| d[key].as_str().unwrap_or_default().to_string();
        match self.kind {
            ProgressKind::Status => match d["status"].as_str().unwrap_or_default() {
                "retrying" => format!(
                    "attempt {} failed: {}; retrying in {} s",
                    d["attempt"],
                    text("error"),
                    d["retry_in_secs"]
                ),
                "waiting" => format!("waiting for approval of a call to {}", text("tool")),
                status => format!("{status} (attempt {})", d["attempt"]),
            },
            ProgressKind::Turn => {
                let calls: Vec<&str> = d["tool_calls"]
                    .as_array()
                    .map(|c| c.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                match (text("text").as_str(), calls.is_empty()) {
                    (said, true) => format!("turn {}: {said}", d["turn"]),
                    ("", false) => format!("turn {}: calls {}", d["turn"], calls.join(", ")),
                    (said, false) => {
                        format!("turn {}: {said} (calls {})", d["turn"], calls.join(", "))
                    }
                }
            }
            ProgressKind::ToolCall => format!("{}({})", text("name"), text("arguments")),
            ProgressKind::ToolResult => format!("{} answered: {}", text("name"), text("result")),
            ProgressKind::End => {
                let mut line = format!("ended {}", text("status"));
                for key in ["error", "output_summary"] {
                    if let Some(more) = d[key].as_str().filter(|m| !m.is_empty()) {
                        line.push_str(": ");
                        line.push_str(more);
                        break;
                    }
                }
                line
            }
        }
    }
}

/// Where a run's progress is recorded (the schedule store). Recording never fails a run:
/// an event that cannot be stored is logged and the run goes on.
#[async_trait]
pub trait ProgressSink: Send + Sync {
    async fn record(&self, run_id: &str, kind: ProgressKind, data: Value);
}

/// What a runtime tells of one run while it goes: to the worker's sink, or nowhere (a
/// runtime driven outside a worker).
#[derive(Clone, Default)]
pub struct Progress {
    sink: Option<(Arc<dyn ProgressSink>, String)>,
}

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Progress")
            .field("run_id", &self.sink.as_ref().map(|(_, run)| run))
            .finish()
    }
}

impl Progress {
    /// The progress of run `run_id`, recorded in `sink`.
    pub fn to(sink: Arc<dyn ProgressSink>, run_id: &str) -> Self {
        Self {
            sink: Some((sink, run_id.to_string())),
        }
    }

    async fn record(&self, kind: ProgressKind, data: Value) {
        if let Some((sink, run_id)) = &self.sink {
            sink.record(run_id, kind, data).await;
        }
    }

    /// The run (or this attempt of it) started, or went on after an approval.
    pub async fn running(&self, attempt: i64) {
        self.record(
            ProgressKind::Status,
            json!({"status": "running", "attempt": attempt}),
        )
        .await;
    }

    /// An attempt failed and another follows after a wait.
    pub async fn retrying(&self, attempt: i64, error: &str, retry_in_secs: i64) {
        self.record(
            ProgressKind::Status,
            json!({"status": "retrying", "attempt": attempt, "error": clip(error),
                   "retry_in_secs": retry_in_secs}),
        )
        .await;
    }

    /// The run waits for a person's approval of a call to `tool`.
    pub async fn waiting(&self, attempt: i64, tool: &str) {
        self.record(
            ProgressKind::Status,
            json!({"status": "waiting", "attempt": attempt, "tool": clip(tool)}),
        )
        .await;
    }

    /// The model answered turn `turn`: its text, and the tools it asks to call.
    pub async fn turn(&self, turn: i64, text: &str, tool_calls: &[Value]) {
        let names: Vec<&str> = tool_calls
            .iter()
            .map(|call| call["function"]["name"].as_str().unwrap_or_default())
            .collect();
        self.record(
            ProgressKind::Turn,
            json!({"turn": turn, "text": clip(text), "tool_calls": names}),
        )
        .await;
    }

    /// A tool call about to be made.
    pub async fn tool_call(&self, name: &str, arguments: &str) {
        self.record(
            ProgressKind::ToolCall,
            json!({"name": clip(name), "arguments": clip(arguments)}),
        )
        .await;
    }

    /// What a tool call answered (or the error it met).
    pub async fn tool_result(&self, name: &str, result: &str) {
        self.record(
            ProgressKind::ToolResult,
            json!({"name": clip(name), "result": clip(result)}),
        )
        .await;
    }
}

/// `text` within [`MAX_EVENT_TEXT_CHARS`], a cut one marked.
fn clip(text: &str) -> String {
    let kept = crate::text::truncate_chars(text, MAX_EVENT_TEXT_CHARS);
    if kept.len() == text.len() {
        text.to_string()
    } else {
        format!("{kept}…")
    }
}

/// The id of the last event a client saw (the `Last-Event-ID` header of a stream it
/// resumes): a whole number from 0 (nothing seen), 1 to 18 digits. Anything else is
/// refused, naming it.
pub fn parse_last_event_id(value: &str) -> Result<i64, InputError> {
    let digits = (1..=MAX_EVENT_ID_DIGITS).contains(&value.len())
        && value.bytes().all(|b| b.is_ascii_digit());
    match value.parse::<i64>() {
        Ok(seq) if digits => Ok(seq),
        _ => Err(InputError::new(
            "Last-Event-ID",
            format!(
                "`{}` is not the id of an event: ids are whole numbers from 0 \
                 (at most {MAX_EVENT_ID_DIGITS} digits)",
                crate::input::printable(crate::text::truncate_chars(value, 40))
            ),
        )),
    }
}

/// The most digits an event id has (every one then fits an `i64`).
pub const MAX_EVENT_ID_DIGITS: usize = 18;

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn every_whole_number_an_event_can_have_is_read_back(seq in 0i64..=999_999_999_999_999_999) {
            prop_assert_eq!(parse_last_event_id(&seq.to_string()).unwrap(), seq);
        }

        #[test]
        fn anything_but_a_whole_number_is_refused_naming_it(value in "\\PC{0,30}") {
            let whole = (1..=MAX_EVENT_ID_DIGITS).contains(&value.len())
                && value.bytes().all(|b| b.is_ascii_digit());
            match parse_last_event_id(&value) {
                Ok(seq) => {
                    prop_assert!(whole, "accepted {value:?}");
                    prop_assert_eq!(seq, value.parse::<i64>().unwrap());
                }
                Err(err) => {
                    prop_assert!(!whole, "refused {value:?}");
                    prop_assert!(err.to_string().contains("Last-Event-ID"));
                }
            }
        }

        #[test]
        fn ids_of_digits_alone_are_read_whatever_their_length(value in "[0-9]{1,24}") {
            let read = parse_last_event_id(&value);
            prop_assert_eq!(read.is_ok(), value.len() <= MAX_EVENT_ID_DIGITS);
        }

        #[test]
        fn a_clipped_text_keeps_its_start_and_fits(text in "\\PC{0,3000}") {
            let clipped = clip(&text);
            prop_assert!(clipped.chars().count() <= MAX_EVENT_TEXT_CHARS + 1);
            prop_assert!(text.starts_with(clipped.trim_end_matches('…')));
        }
    }

    #[test]
    fn negative_signed_and_oversized_ids_are_refused() {
        for bad in [
            "-1",
            "+1",
            "1.5",
            "",
            " ",
            " 1",
            "1e3",
            "9999999999999999999",
            "١",
        ] {
            assert!(parse_last_event_id(bad).is_err(), "{bad:?} accepted");
        }
    }
}
