//! A tool's result as the model reads it: its text blocks joined (other blocks named), or
//! its structured content when it has no text, cut to the server's `max_result_bytes` on
//! a character boundary with a note saying how much was left out (the note within the
//! limit); an error result is
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
    let text = crate::text::cut_with_note(&text, max_bytes);
    if result.is_error == Some(true) {
        json!({ "error": text })
    } else {
        json!({ "result": text })
    }
}
