//! An artifact's name and MIME type, checked by the common rule (DESIGN.md section 10).

use crate::input::{self, InputError, Lines};

/// Longest name, in characters.
pub const MAX_NAME_CHARS: usize = 255;
/// Longest MIME type, in bytes.
pub const MAX_MIME_BYTES: usize = 255;
/// The MIME type of an artifact stored without one.
pub const DEFAULT_MIME_TYPE: &str = "application/octet-stream";

/// A file name: 1..=255 characters, one line, no control character (NUL included), no
/// `/` or `\`, not `.` or `..`, no leading or trailing whitespace.
pub fn check_name(name: &str) -> Result<(), InputError> {
    const FIELD: &str = "artifact name";
    input::check_text(FIELD, name, MAX_NAME_CHARS * 4, Lines::One)?;
    let chars = name.chars().count();
    if chars > MAX_NAME_CHARS {
        return Err(InputError::new(
            FIELD,
            format!("is {chars} characters, over the limit of {MAX_NAME_CHARS}"),
        ));
    }
    if name.contains(['/', '\\']) {
        return Err(InputError::new(FIELD, "must not contain `/` or `\\`"));
    }
    if name == "." || name == ".." {
        return Err(InputError::new(FIELD, "must not be `.` or `..`"));
    }
    if name.trim() != name {
        return Err(InputError::new(
            FIELD,
            "must not start or end with whitespace",
        ));
    }
    Ok(())
}

/// RFC 9110's token characters.
fn is_token(text: &str) -> bool {
    !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// A MIME type of the shape `type/subtype`, optionally followed by `; name=value`
/// parameters (values a token or a quoted string), ASCII, at most 255 bytes.
pub fn check_mime_type(mime: &str) -> Result<(), InputError> {
    const FIELD: &str = "artifact type";
    input::check_text(FIELD, mime, MAX_MIME_BYTES, Lines::One)?;
    let bad = |why: &str| {
        Err(InputError::new(
            FIELD,
            format!(
                "`{}` is not a MIME type of the shape type/subtype (such as text/csv): {why}",
                input::printable(mime)
            ),
        ))
    };
    if !mime.is_ascii() {
        return bad("only ASCII is allowed");
    }
    let mut parts = mime.split(';');
    let essence = parts.next().unwrap_or_default().trim();
    let Some((kind, subtype)) = essence.split_once('/') else {
        return bad("no `/`");
    };
    if !is_token(kind) || !is_token(subtype) {
        return bad("the type and subtype must be non-empty tokens");
    }
    for parameter in parts {
        let Some((name, value)) = parameter.trim().split_once('=') else {
            return bad("a parameter is not name=value");
        };
        let quoted = value.len() >= 2
            && value.starts_with('"')
            && value.ends_with('"')
            && !value[1..value.len() - 1].contains(['"', '\\']);
        if !is_token(name) || !(is_token(value) || quoted) {
            return bad("a parameter is not name=value");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        for ok in ["report.pdf", "a", "Bericht für März.csv", &"é".repeat(255)] {
            assert!(check_name(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            " ",
            "a/b",
            "a\\b",
            "a\0b",
            "..",
            ".",
            " a",
            &"x".repeat(256),
        ] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn mime_types() {
        for ok in [
            "text/csv",
            "image/svg+xml",
            "text/plain; charset=utf-8",
            "a/b;x=\"y z\"",
        ] {
            assert!(check_mime_type(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "text",
            "text/",
            "/csv",
            "text/c sv",
            "tëxt/csv",
            "a/b;x",
            "a/b\0",
        ] {
            assert!(check_mime_type(bad).is_err(), "{bad:?}");
        }
    }
}
