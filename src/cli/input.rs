//! Text and files from the command line: an argument of `-` is read from standard input,
//! never more than its limit (more is refused without reading the rest).

use std::path::Path;

use nightshift::error::{Error, ErrorKind};
use nightshift::input::{read_limited, utf8};

/// A text argument, or standard input when it is `-`, read up to `max_bytes`.
pub fn text_arg(field: &str, text: String, max_bytes: usize) -> Result<String, Error> {
    if text != "-" {
        return Ok(text);
    }
    let bytes = read_limited(
        &format!("{field} (standard input)"),
        std::io::stdin().lock(),
        max_bytes,
    )?;
    Ok(utf8(&format!("{field} (standard input)"), bytes)?)
}

/// A file's bytes (standard input for `-`), up to `max_bytes`.
pub fn file_arg(path: &Path, max_bytes: usize) -> Result<Vec<u8>, Error> {
    if path.as_os_str() == "-" {
        return Ok(read_limited(
            "standard input",
            std::io::stdin().lock(),
            max_bytes,
        )?);
    }
    let file = std::fs::File::open(path).map_err(|e| {
        let kind = if e.kind() == std::io::ErrorKind::NotFound {
            ErrorKind::NotFound
        } else {
            ErrorKind::BadInput
        };
        Error::new(kind, format!("cannot read {}: {e}", path.display()))
    })?;
    Ok(read_limited(&path.display().to_string(), file, max_bytes)?)
}
