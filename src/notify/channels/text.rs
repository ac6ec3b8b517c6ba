//! A message as text a person reads, and cut into the parts a service takes.

use serde_json::Value;

use crate::text::truncate_chars;

/// The text a person reads: the summary line, then the output, then a link to the run
/// when the API's public address is configured.
pub fn render_text(payload: &Value) -> String {
    let summary = payload["summary"].as_str().unwrap_or_default();
    let output = payload["output"].as_str().unwrap_or_default().trim();
    let mut text = if output.is_empty() || output == summary {
        summary.to_string()
    } else {
        format!("{summary}\n\n{output}")
    };
    if let Some(url) = payload["run_url"].as_str() {
        text.push_str(&format!("\n\n{url}"));
    }
    if let Some(files) = payload["artifacts"].as_array().filter(|f| !f.is_empty()) {
        text.push_str("\n\nFiles:");
        for file in files {
            text.push_str(&format!(
                "\n- {} ({}, {} bytes)",
                file["name"].as_str().unwrap_or_default(),
                file["type"].as_str().unwrap_or_default(),
                file["size"].as_i64().unwrap_or_default()
            ));
            if let Some(url) = file["url"].as_str() {
                text.push_str(&format!(" {url}"));
            }
        }
    }
    text
}

/// Splits on character boundaries, preferring line breaks, into parts of at most `limit`.
pub(super) fn split_text(text: &str, limit: usize) -> Vec<String> {
    let mut parts = Vec::new();
    let mut rest = text;
    while rest.chars().count() > limit {
        let head = truncate_chars(rest, limit);
        let cut = head
            .rfind('\n')
            .filter(|i| *i > head.len() / 2)
            .map_or(head.len(), |i| i + 1);
        parts.push(rest[..cut].to_string());
        rest = &rest[cut..];
    }
    if !rest.is_empty() || parts.is_empty() {
        parts.push(rest.to_string());
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const TELEGRAM_LIMIT: usize = super::super::TELEGRAM_LIMIT;

    #[test]
    fn long_text_splits_on_characters_within_the_limit() {
        let text = "é".repeat(9000);
        let parts = split_text(&text, TELEGRAM_LIMIT);
        assert_eq!(parts.len(), 3);
        assert!(parts.iter().all(|p| p.chars().count() <= TELEGRAM_LIMIT));
        assert_eq!(parts.concat(), text);
        let lines = "line\n".repeat(2000);
        let parts = split_text(&lines, TELEGRAM_LIMIT);
        assert!(parts[0].ends_with('\n'));
        assert_eq!(parts.concat(), lines);
    }

    #[test]
    fn the_text_lists_a_runs_files_with_their_links() {
        let payload = json!({
            "summary": "report: done",
            "output": "done",
            "artifacts": [
                {"id": "art-1", "name": "a.csv", "type": "text/csv", "size": 3,
                 "url": "https://ns.example/v1/artifacts/art-1/content"},
                {"id": "art-2", "name": "b.png", "type": "image/png", "size": 9},
            ]
        });
        assert_eq!(
            render_text(&payload),
            "report: done\n\ndone\n\nFiles:\n\
             - a.csv (text/csv, 3 bytes) https://ns.example/v1/artifacts/art-1/content\n\
             - b.png (image/png, 9 bytes)"
        );
    }
}
