//! Turns whatever a user typed into a safe FTS5 query. User text never reaches `MATCH`
//! raw: quotes, `*`, `-`, `NEAR`, `AND`, brackets and column names are all syntax there.
//! Each remaining word is quoted and the words are OR-ed (phrase-quoting the whole query
//! would demand every word in order and kill recall).

use crate::text;

/// Most terms kept from one query; longer queries gain little and cost a lot.
const MAX_TERMS: usize = 32;

/// The FTS5 expression matching any of the query's words in the note versions' full-text
/// index (`note_versions_fts`, column `content`), or `None` when the query has no
/// searchable word. The chunks' keyword leg has an index of its own (`terms.rs`).
pub fn keyword_expression(query: &str) -> Option<String> {
    const COLUMN: &str = "content";
    // Words are letters and digits only, so quoting cannot be escaped from.
    let quoted: Vec<String> = keyword_terms(query)?
        .iter()
        .map(|t| format!("{COLUMN}:\"{t}\""))
        .collect();
    Some(quoted.join(" OR "))
}

/// [`keyword_expression`] for PostgreSQL's full-text search (`to_tsquery('english', …)`
/// over `note_versions.words`): the same words, each quoted, OR-ed.
pub fn tsquery_expression(query: &str) -> Option<String> {
    let quoted: Vec<String> = keyword_terms(query)?
        .iter()
        .map(|t| format!("'{t}'"))
        .collect();
    Some(quoted.join(" | "))
}

/// The words a query searches for: each word once, stop words left out unless there is
/// nothing else, at most [`MAX_TERMS`].
fn keyword_terms(query: &str) -> Option<Vec<&str>> {
    // Each word as typed, with its lower case for telling repeats and stop words: FTS5
    // folds the word itself, by the Unicode its tokenizer knows (6.1), as it folded the
    // stored text; a word folded here by newer Unicode (a capital of Osage, Cherokee,
    // Georgian Mtavruli) would look for a form that was never indexed.
    let mut all: Vec<(&str, String)> = Vec::new();
    for word in text::words(query) {
        let folded = word.to_lowercase();
        if !all.iter().any(|(_, seen)| *seen == folded) {
            all.push((word, folded));
        }
    }
    let content: Vec<&str> = all
        .iter()
        .filter(|(_, folded)| !text::is_stop_word(folded))
        .map(|(word, _)| *word)
        .collect();
    // A query made only of stop words ("who is it?") still searches for them.
    let terms: Vec<&str> = if content.is_empty() {
        all.iter().map(|(word, _)| *word).collect()
    } else {
        content
    };
    if terms.is_empty() {
        return None;
    }
    Some(terms.into_iter().take(MAX_TERMS).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operators_and_quotes_become_plain_terms() {
        assert_eq!(
            keyword_expression(r#"tea" OR NEAR(x* -y) AND {col}:z"#).unwrap(),
            r#"content:"tea" OR content:"NEAR" OR content:"x" OR content:"y" OR content:"col" OR content:"z""#
        );
    }

    #[test]
    fn stop_words_dropped_unless_nothing_else() {
        assert_eq!(
            keyword_expression("what is the plan").unwrap(),
            r#"content:"plan""#
        );
        assert_eq!(
            keyword_expression("who is it").unwrap(),
            r#"content:"who" OR content:"is" OR content:"it""#
        );
        assert_eq!(keyword_expression(" ?! ** "), None);
        // A repeat in another case is one term, kept as first typed.
        assert_eq!(
            keyword_expression("Tea tea TEA").unwrap(),
            r#"content:"Tea""#
        );
    }
}
