//! Text helpers shared by the index, the keyword query builder and the hash embedder:
//! whitespace normalisation, tokenisation that mirrors FTS5's `unicode61` tokenizer,
//! stop words, and truncation on character boundaries.

/// Collapses every run of whitespace to one space and trims the ends.
pub fn normalize_whitespace(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for word in text.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

/// Lower-cased alphanumeric runs, as FTS5's `unicode61` tokenizer splits text: any
/// character that is not a letter or digit separates tokens.
pub fn tokens(text: &str) -> impl Iterator<Item = String> + '_ {
    words(text).map(str::to_lowercase)
}

/// The alphanumeric runs of `text` as they are written (see [`tokens`]).
pub fn words(text: &str) -> impl Iterator<Item = &str> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|t| !t.is_empty())
}

/// True for English function words that carry no search signal on their own.
pub fn is_stop_word(token: &str) -> bool {
    STOP_WORDS.binary_search(&token).is_ok()
}

/// The first `max_chars` characters of `text`, never splitting a character.
pub fn truncate_chars(text: &str, max_chars: usize) -> &str {
    match text.char_indices().nth(max_chars) {
        Some((byte, _)) => &text[..byte],
        None => text,
    }
}

/// At most the first `max_bytes` bytes of `text`, never splitting a character.
pub fn truncate_bytes(text: &str, max_bytes: usize) -> &str {
    if text.len() <= max_bytes {
        return text;
    }
    let mut end = max_bytes;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// `text` within `max_bytes`: whole when it fits, else cut on a character boundary with a
/// note at the end saying how much was left out (the note counts against the limit).
pub fn cut_with_note(text: &str, max_bytes: usize) -> std::borrow::Cow<'_, str> {
    if text.len() <= max_bytes {
        return std::borrow::Cow::Borrowed(text);
    }
    // The note's own length depends on the number it carries; size it for the largest.
    let note_for = |left: usize| format!("\n[… {left} more bytes not kept]");
    let room = max_bytes.saturating_sub(note_for(text.len()).len());
    let kept = truncate_bytes(text, room);
    let mut out = kept.to_string();
    out.push_str(&note_for(text.len() - kept.len()));
    std::borrow::Cow::Owned(crate::text::truncate_bytes(&out, max_bytes).to_string())
}

/// The last `max_chars` characters of `text`, never splitting a character.
pub fn tail_chars(text: &str, max_chars: usize) -> &str {
    let count = text.chars().count();
    if count <= max_chars {
        return text;
    }
    match text.char_indices().nth(count - max_chars) {
        Some((byte, _)) => &text[byte..],
        None => "",
    }
}

// Sorted, for binary search. Kept short on purpose: words like "not", "never", "no" carry
// meaning in memories ("does not like coffee") and are not here.
const STOP_WORDS: &[&str] = &[
    "a",
    "about",
    "after",
    "again",
    "all",
    "am",
    "an",
    "and",
    "any",
    "are",
    "as",
    "at",
    "be",
    "because",
    "been",
    "before",
    "being",
    "between",
    "both",
    "but",
    "by",
    "can",
    "could",
    "did",
    "do",
    "does",
    "doing",
    "down",
    "during",
    "each",
    "few",
    "for",
    "from",
    "further",
    "had",
    "has",
    "have",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "herself",
    "him",
    "himself",
    "his",
    "how",
    "i",
    "if",
    "in",
    "into",
    "is",
    "it",
    "its",
    "itself",
    "just",
    "me",
    "more",
    "most",
    "my",
    "myself",
    "of",
    "off",
    "on",
    "once",
    "only",
    "or",
    "other",
    "our",
    "ours",
    "ourselves",
    "out",
    "over",
    "own",
    "s",
    "same",
    "she",
    "should",
    "so",
    "some",
    "such",
    "t",
    "than",
    "that",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "through",
    "to",
    "too",
    "under",
    "until",
    "up",
    "very",
    "was",
    "we",
    "were",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "why",
    "will",
    "with",
    "would",
    "you",
    "your",
    "yours",
    "yourself",
    "yourselves",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_words_are_sorted() {
        assert!(STOP_WORDS.windows(2).all(|w| w[0] < w[1]));
        assert!(is_stop_word("the"));
        assert!(!is_stop_word("not"));
    }

    #[test]
    fn tail_keeps_whole_characters() {
        assert_eq!(tail_chars("héllo wörld", 5), "wörld");
        assert_eq!(tail_chars("ab", 5), "ab");
        assert_eq!(tail_chars("日本語", 2), "本語");
        assert_eq!(tail_chars("abc", 0), "");
    }

    #[test]
    fn tokens_split_like_unicode61() {
        let t: Vec<_> = tokens("Don't-PANIC: café 42!").collect();
        assert_eq!(t, ["don", "t", "panic", "café", "42"]);
    }

    #[test]
    fn truncation_respects_characters() {
        assert_eq!(truncate_chars("héllo", 2), "hé");
        assert_eq!(truncate_chars("日本語", 5), "日本語");
        assert_eq!(truncate_chars("", 3), "");
    }

    #[test]
    fn cuts_keep_characters_and_say_so() {
        assert_eq!(cut_with_note("short", 100), "short");
        let long = "é".repeat(1000);
        let cut = cut_with_note(&long, 200);
        assert!(cut.len() <= 200);
        assert!(cut.ends_with("more bytes not kept]"), "{cut}");
        assert_eq!(truncate_bytes("héllo", 2), "h");
    }

    proptest::proptest! {
        #[test]
        fn any_text_is_cut_within_its_limit(text in proptest::prelude::any::<String>(), max in 0usize..300) {
            let cut = cut_with_note(&text, max);
            proptest::prop_assert!(cut.len() <= max || cut == text);
            proptest::prop_assert!(truncate_bytes(&text, max).len() <= max);
        }
    }

    #[test]
    fn whitespace_collapses() {
        assert_eq!(normalize_whitespace("  a \n\t b  "), "a b");
    }
}
