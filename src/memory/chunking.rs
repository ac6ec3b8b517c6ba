//! Splits text into overlapping chunks for the search index, on character boundaries and,
//! where one is near, on a word boundary.

use crate::text::normalize_whitespace;

/// Chunks of at most `max_chars` characters; consecutive chunks share about
/// `overlap_chars` characters so a phrase cut by a boundary is still found whole.
pub fn chunk_text(text: &str, max_chars: usize, overlap_chars: usize) -> Vec<String> {
    let normalized = normalize_whitespace(text);
    let chars: Vec<char> = normalized.chars().collect();
    if chars.is_empty() {
        return Vec::new();
    }
    if chars.len() <= max_chars {
        return vec![normalized];
    }
    let mut chunks = Vec::new();
    let mut start = 0;
    loop {
        let hard_end = (start + max_chars).min(chars.len());
        let end = if hard_end == chars.len() {
            hard_end
        } else {
            // Prefer to end at a space in the last quarter of the window.
            let floor = start + max_chars * 3 / 4;
            (floor..hard_end)
                .rev()
                .find(|&i| chars[i] == ' ')
                .unwrap_or(hard_end)
        };
        let chunk: String = chars[start..end].iter().collect();
        chunks.push(chunk.trim().to_string());
        if end == chars.len() {
            break;
        }
        let mut next = end.saturating_sub(overlap_chars).max(start + 1);
        // Start the overlap at a word boundary when one is close.
        if let Some(space) = (next..end).find(|&i| chars[i] == ' ') {
            if space < end - 1 {
                next = space + 1;
            }
        }
        start = next;
    }
    chunks.retain(|c| !c.is_empty());
    chunks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_one_normalised_chunk() {
        assert_eq!(chunk_text("  hello \n world ", 640, 96), ["hello world"]);
        assert!(chunk_text("   ", 640, 96).is_empty());
    }

    #[test]
    fn long_text_is_split_within_limit_with_overlap() {
        let words: Vec<String> = (0..400).map(|i| format!("word{i}")).collect();
        let text = words.join(" ");
        let chunks = chunk_text(&text, 640, 96);
        assert!(chunks.len() > 1);
        for c in &chunks {
            assert!(c.chars().count() <= 640, "{}", c.chars().count());
        }
        // Every word survives somewhere, and neighbours overlap.
        for w in &words {
            assert!(
                chunks.iter().any(|c| c.split(' ').any(|x| x == w)),
                "{w} lost"
            );
        }
        for pair in chunks.windows(2) {
            let last_word = pair[0].split(' ').next_back().unwrap();
            assert!(pair[1].contains(last_word), "no overlap between chunks");
        }
    }

    #[test]
    fn multibyte_text_is_cut_on_characters() {
        let text = "日本語のテキスト".repeat(200);
        let chunks = chunk_text(&text, 100, 10);
        assert!(chunks.iter().all(|c| c.chars().count() <= 100));
        let rejoined: usize = chunks.iter().map(|c| c.chars().count()).sum();
        assert!(rejoined >= text.chars().count());
    }
}
