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
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|t| !t.is_empty())
        .map(|t| t.to_lowercase())
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
    fn whitespace_collapses() {
        assert_eq!(normalize_whitespace("  a \n\t b  "), "a b");
    }
}
