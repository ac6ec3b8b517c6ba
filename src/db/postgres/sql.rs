//! Statements as PostgreSQL reads them. The stores write one SQL text for both engines
//! where the statement is the same, with SQLite's numbered parameters (`?1`); PostgreSQL
//! numbers them `$1`. The rewrite leaves quoted texts, quoted names and comments alone.

use std::borrow::Cow;

/// `sql` with every parameter written `$N`: `?N` keeps its number, and a bare `?` takes
/// the next one after the highest seen so far (SQLite's rule).
pub fn to_postgres(sql: &str) -> Cow<'_, str> {
    if !sql.contains('?') {
        return Cow::Borrowed(sql);
    }
    let mut out = String::with_capacity(sql.len() + 8);
    let mut chars = sql.char_indices().peekable();
    let mut highest = 0u32;
    while let Some((_, c)) = chars.next() {
        match c {
            '\'' | '"' => {
                out.push(c);
                // A quote is doubled inside its own kind of quotes, which reads the same
                // as closing and opening again.
                for (_, inner) in chars.by_ref() {
                    out.push(inner);
                    if inner == c {
                        break;
                    }
                }
            }
            '-' if matches!(chars.peek(), Some((_, '-'))) => {
                out.push(c);
                for (_, inner) in chars.by_ref() {
                    out.push(inner);
                    if inner == '\n' {
                        break;
                    }
                }
            }
            '?' => {
                let mut digits = String::new();
                while let Some((_, d)) = chars.peek().copied().filter(|(_, d)| d.is_ascii_digit()) {
                    digits.push(d);
                    chars.next();
                }
                let number = match digits.parse::<u32>() {
                    Ok(number) => number,
                    Err(_) => highest + 1,
                };
                highest = highest.max(number);
                out.push('$');
                out.push_str(&number.to_string());
            }
            _ => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// Whether a statement may write: anything but a plain read (`SELECT`, `VALUES`,
/// `SHOW`, `EXPLAIN`). A `WITH` counts as a write, since it may hold one.
pub fn writes(sql: &str) -> bool {
    let mut rest = sql.trim_start();
    // Leading comments are not the statement.
    while let Some(after) = rest.strip_prefix("--") {
        rest = after
            .split_once('\n')
            .map_or("", |(_, next)| next)
            .trim_start();
    }
    let first: String = rest
        .chars()
        .take_while(|c| c.is_ascii_alphabetic())
        .collect::<String>()
        .to_ascii_uppercase();
    !matches!(first.as_str(), "SELECT" | "VALUES" | "SHOW" | "EXPLAIN")
}

/// Whether a statement claims its rows with `FOR UPDATE SKIP LOCKED`: it locks the rows
/// it takes, and skips the ones another claim holds, so it needs no write lock to keep
/// two claims from taking the same row, and waits for no one.
pub fn claims_rows_itself(sql: &str) -> bool {
    sql.to_ascii_uppercase()
        .split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
        .filter(|word| !word.is_empty())
        .collect::<Vec<_>>()
        .windows(4)
        .any(|w| w == ["FOR", "UPDATE", "SKIP", "LOCKED"])
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn numbered_and_bare_parameters_become_dollar_numbers() {
        assert_eq!(to_postgres("SELECT 1"), "SELECT 1");
        assert_eq!(
            to_postgres("UPDATE t SET a = ?2 WHERE b = ?1 AND c = ?12"),
            "UPDATE t SET a = $2 WHERE b = $1 AND c = $12"
        );
        assert_eq!(to_postgres("VALUES (?, ?, ?)"), "VALUES ($1, $2, $3)");
        assert_eq!(to_postgres("VALUES (?3, ?)"), "VALUES ($3, $4)");
    }

    #[test]
    fn reads_are_told_from_writes() {
        for read in [
            "SELECT 1",
            "  select x FROM t",
            "-- why\nSELECT 1",
            "VALUES (1)",
        ] {
            assert!(!writes(read), "{read}");
        }
        for write in [
            "INSERT INTO t VALUES (1) RETURNING x",
            "\n UPDATE t SET x = 1 RETURNING x",
            "DELETE FROM t",
            "WITH a AS (UPDATE t SET x = 1 RETURNING x) SELECT * FROM a",
            "-- a comment\nupdate t set x = 1",
        ] {
            assert!(writes(write), "{write}");
        }
    }

    #[test]
    fn a_claim_that_locks_its_own_rows_is_told_apart() {
        assert!(claims_rows_itself(
            "UPDATE t SET a = 1 WHERE id IN (SELECT id FROM t LIMIT 3\n for update  skip locked)"
        ));
        assert!(!claims_rows_itself(
            "UPDATE t SET a = 1 WHERE id IN (SELECT id FROM t FOR UPDATE)"
        ));
        assert!(!claims_rows_itself("UPDATE t SET note = 'skip locked'"));
    }

    #[test]
    fn quoted_texts_names_and_comments_are_left_alone() {
        assert_eq!(
            to_postgres("SELECT '?1', \"a?\" -- is it?\n FROM t WHERE x = ?1"),
            "SELECT '?1', \"a?\" -- is it?\n FROM t WHERE x = $1"
        );
        assert_eq!(to_postgres("SELECT 'it''s ?' , ?"), "SELECT 'it''s ?' , $1");
    }

    proptest! {
        /// Outside quotes every `?N` becomes `$N` and nothing else changes: the text with
        /// `$` read back as `?` is the text given.
        #[test]
        fn only_parameters_change(
            parts in proptest::collection::vec(
                prop_oneof![
                    "[a-z =,()]{0,6}",
                    (1u32..40).prop_map(|n| format!("?{n}")),
                    "'[a-z?$ ]{0,5}'",
                ],
                0..12,
            )
        ) {
            let sql: String = parts.concat();
            let rewritten = to_postgres(&sql).into_owned();
            let mut back = String::new();
            let mut in_quote = false;
            for c in rewritten.chars() {
                if c == '\'' {
                    in_quote = !in_quote;
                }
                back.push(if c == '$' && !in_quote { '?' } else { c });
            }
            prop_assert_eq!(back, sql.clone());
            let outside: String = sql.split('\'').step_by(2).collect();
            prop_assert_eq!(
                rewritten.split('\'').step_by(2).collect::<String>().contains('?'),
                false,
                "a parameter left in {}",
                outside
            );
        }
    }
}
