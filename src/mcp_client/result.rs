//! A tool's result as the model reads it: its text blocks joined (other blocks named), or
//! its structured content when it has no text, cut to the server's `max_result_bytes` on
//! a character boundary with a note saying how much was left out; an error result is
//! `{"error": …}` like every other tool's.

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{json, Value};

pub(super) fn for_model(result: &CallToolResult, max_bytes: usize) -> Value {
    let mut text = String::new();
    for block in &result.content {
        if !text.is_empty() {
            text.push('\n');
        }
        match block {
            ContentBlock::Text(t) => text.push_str(&t.text),
            ContentBlock::Image(_) => text.push_str("[an image]"),
            ContentBlock::Audio(_) => text.push_str("[audio]"),
            ContentBlock::Resource(_) => text.push_str("[an embedded resource]"),
            ContentBlock::ResourceLink(link) => {
                text.push_str(&format!("[a resource: {}]", link.uri))
            }
            // A kind of block newer than this build.
            _ => text.push_str("[content of another kind]"),
        }
    }
    if text.is_empty() {
        if let Some(structured) = &result.structured_content {
            text = structured.to_string();
        }
    }
    let text = cut(&text, max_bytes);
    if result.is_error == Some(true) {
        json!({ "error": text })
    } else {
        json!({ "result": text })
    }
}

/// At most `max_bytes` of `text`, cut on a character boundary and marked.
pub(super) fn cut(text: &str, max_bytes: usize) -> String {
    if text.len() <= max_bytes {
        return text.to_string();
    }
    let mut end = max_bytes;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}\n[cut: {} more bytes not shown (max_result_bytes)]",
        &text[..end],
        text.len() - end
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// A cut result is a prefix of the text within the limit, on a character
        /// boundary, and says how much is missing; a short one is whole.
        #[test]
        fn a_cut_keeps_a_prefix_within_the_limit(text in "\\PC{0,200}", max in 0usize..300) {
            let out = cut(&text, max);
            if text.len() <= max {
                prop_assert_eq!(out, text);
            } else {
                let (kept, note) = out.split_once("\n[cut: ").unwrap();
                prop_assert!(kept.len() <= max);
                prop_assert!(text.starts_with(kept));
                let more = format!("{} more bytes", text.len() - kept.len());
                prop_assert!(note.starts_with(&more));
            }
        }
    }
}
