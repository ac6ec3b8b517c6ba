//! What the CLI prints: JSON for machines, text for people. Text shows stored data through
//! `printable`, so a note or a user id holding an escape sequence cannot drive the
//! terminal. A closed stdout (`nightshift … | head -1`) ends the output quietly, as for any
//! Unix tool: the command's work is done, and the exit status stays what it was.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

use nightshift::error::{Error, ErrorKind};
use nightshift::input::printable;
use serde::Serialize;

/// Set once stdout is found closed: nothing more is written.
static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);

/// Whether a reader went away (a `--watch` loop stops then).
pub fn stdout_closed() -> bool {
    STDOUT_CLOSED.load(Ordering::Relaxed)
}

/// Writes `text` and a newline to stdout; a closed pipe ends output quietly.
pub fn line(text: &str) -> Result<(), Error> {
    if stdout_closed() {
        return Ok(());
    }
    let mut out = std::io::stdout().lock();
    let written = out
        .write_all(text.as_bytes())
        .and_then(|()| out.write_all(b"\n"))
        .and_then(|()| out.flush());
    match written {
        Ok(()) => Ok(()),
        Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => {
            STDOUT_CLOSED.store(true, Ordering::Relaxed);
            Ok(())
        }
        Err(err) => Err(Error::new(
            ErrorKind::Unavailable,
            format!("cannot write to standard output: {err}"),
        )),
    }
}

/// Writes raw bytes to stdout (an artifact's content); a closed pipe ends output quietly.
pub fn bytes(data: &[u8]) -> Result<(), Error> {
    if stdout_closed() {
        return Ok(());
    }
    let mut out = std::io::stdout().lock();
    match out.write_all(data).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => {
            STDOUT_CLOSED.store(true, Ordering::Relaxed);
            Ok(())
        }
        Err(err) => Err(Error::new(
            ErrorKind::Unavailable,
            format!("cannot write to standard output: {err}"),
        )),
    }
}

/// Prints `value` as JSON, or `human()` (made printable) otherwise.
pub fn print<T: Serialize>(
    json: bool,
    value: &T,
    human: impl FnOnce() -> String,
) -> Result<(), Error> {
    if json {
        let text = serde_json::to_string_pretty(value)
            .map_err(|e| Error::new(ErrorKind::Internal, format!("cannot write JSON: {e}")))?;
        line(&text)
    } else {
        let text = human();
        if text.is_empty() {
            return Ok(());
        }
        line(&printable(&text))
    }
}

/// A note for the person at the terminal, on stderr (never mixed into `--json` output).
pub fn note(text: &str) {
    super::to_stderr(&format!("note: {}", printable(text)));
}
