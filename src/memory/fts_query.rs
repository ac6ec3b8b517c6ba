//! Turns whatever a user typed into a safe FTS5 query. User text never reaches `MATCH`
//! raw: quotes, `*`, `-`, `NEAR`, `AND`, brackets and column names are all syntax there.
//! Each remaining word is quoted and the words are OR-ed (phrase-quoting the whole query
//! would demand every word in order and kill recall).

use crate::text;

/// Most terms kept from one query; longer queries gain little and cost a lot.
const MAX_TERMS: usize = 32;

/// The FTS5 expression matching any of the query's words in the `text` or `context`
/// columns (never `scope`), or `None` when the query has no searchable word.
pub fn keyword_expression(query: &str) -> Option<String> {
    let mut all: Vec<String> = Vec::new();
    for token in text::tokens(query) {
        if !all.contains(&token) {
            all.push(token);
        }
    }
    let content: Vec<&String> = all.iter().filter(|t| !text::is_stop_word(t)).collect();
    // A query made only of stop words ("who is it?") still searches for them.
    let terms: Vec<&String> = if content.is_empty() {
        all.iter().collect()
    } else {
        content
    };
    if terms.is_empty() {
        return None;
    }
    // Tokens are letters and digits only, so quoting cannot be escaped from.
    let quoted: Vec<String> = terms
        .iter()
        .take(MAX_TERMS)
        .map(|t| format!("{{text context}}:\"{t}\""))
        .collect();
    Some(quoted.join(" OR "))
}

/// Restricts an expression to chunks whose `scope` column holds one of `scopes`.
pub fn scoped(expression: &str, scopes: &[String]) -> String {
    let scope: Vec<String> = scopes.iter().map(|s| format!("scope:\"{s}\"")).collect();
    format!("({}) AND ({expression})", scope.join(" OR "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operators_and_quotes_become_plain_terms() {
        assert_eq!(
            keyword_expression(r#"tea" OR NEAR(x* -y) AND {col}:z"#).unwrap(),
            r#"{text context}:"tea" OR {text context}:"near" OR {text context}:"x" OR {text context}:"y" OR {text context}:"col" OR {text context}:"z""#
        );
    }

    #[test]
    fn stop_words_dropped_unless_nothing_else() {
        assert_eq!(
            keyword_expression("what is the plan").unwrap(),
            r#"{text context}:"plan""#
        );
        assert_eq!(
            keyword_expression("who is it").unwrap(),
            r#"{text context}:"who" OR {text context}:"is" OR {text context}:"it""#
        );
        assert_eq!(keyword_expression(" ?! ** "), None);
    }
}
