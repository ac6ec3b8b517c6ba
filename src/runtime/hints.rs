//! Macro hints: after the model's tool calls in a turn, one line telling it which call
//! this user's runs usually make next (a macro the `macros` consolidation pass learned).
//! A hint is advice in a system message; it never fails or changes the run: a database
//! that cannot answer means no hint and a warning.

use serde_json::Value;

use crate::memory::{args_pattern, call_arguments, Macro, Memory};

/// The hint after `calls` (this turn's, in order) for `user_id`, from a macro at least
/// `min_confidence` confident (0: none); counted as a use of that macro.
pub async fn after_calls(
    memory: &Memory,
    user_id: &str,
    calls: &[Value],
    min_confidence: f64,
) -> Option<String> {
    if min_confidence <= 0.0 {
        return None;
    }
    let last = calls.last()?;
    let tool = last["function"]["name"].as_str()?;
    let pattern = args_pattern(&call_arguments(last));
    let found = memory
        .macro_after(user_id, tool, &pattern, min_confidence)
        .await;
    let hinted = match found {
        Ok(hinted) => hinted?,
        Err(err) => {
            tracing::warn!(%user_id, tool, %err, "cannot look up a macro hint; going on without one");
            return None;
        }
    };
    if let Err(err) = memory.macro_used(user_id, &hinted).await {
        tracing::warn!(%user_id, tool, %err, "cannot count a macro hint's use");
    }
    Some(text(&hinted))
}

/// The hint's words.
pub fn text(hinted: &Macro) -> String {
    let next = match &hinted.next2_tool {
        Some(next2) => format!("`{}` and then `{next2}`", hinted.next_tool),
        None => format!("`{}`", hinted.next_tool),
    };
    let constants: Vec<String> = hinted
        .next_args
        .as_object()
        .map(|args| {
            args.iter()
                .filter(|(_, value)| !value.is_null())
                .map(|(name, value)| format!("{name}={value}"))
                .collect()
        })
        .unwrap_or_default();
    let with = if constants.is_empty() {
        String::new()
    } else {
        format!(", usually with {}", constants.join(", "))
    };
    let hint = format!(
        "After `{}`, runs for this user usually call {next} next{with} (confidence {:.2}).",
        hinted.trigger_tool, hinted.confidence
    );
    // Names and constants come from earlier runs' calls, which a model wrote: a hint
    // stays a line, however long they were.
    if hint.chars().count() <= MAX_HINT_CHARS {
        return hint;
    }
    format!("{}…", crate::text::truncate_chars(&hint, MAX_HINT_CHARS))
}

/// Longest hint, in characters.
const MAX_HINT_CHARS: usize = 600;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_hint_names_the_next_calls_and_constant_arguments() {
        let hinted = Macro {
            trigger_tool: "memory_search".into(),
            trigger_args_pattern: "query".into(),
            next_tool: "memory_save".into(),
            next2_tool: None,
            next_args: json!({"content": null, "tags": ["daily"]}),
            support: 9.0,
            trigger_runs: 10.0,
            confidence: 0.923,
            seen_count: 9,
            use_count: 0,
            first_seen_at: 0,
            last_seen_at: 0,
        };
        assert_eq!(
            text(&hinted),
            "After `memory_search`, runs for this user usually call `memory_save` next, \
             usually with tags=[\"daily\"] (confidence 0.92)."
        );
        let long = Macro {
            next_args: json!({"content": "é".repeat(10_000)}),
            ..hinted
        };
        assert_eq!(text(&long).chars().count(), MAX_HINT_CHARS + 1);
    }
}
