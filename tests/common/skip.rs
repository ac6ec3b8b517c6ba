//! Tests that need a peer no registry ships or the test script installs: when it is not
//! here, the test prints one line saying it was skipped and why, to the process's stderr
//! past the harness's capture (so a skip is always seen), and returns. Under
//! scripts/test.sh (what CI runs), which installs every peer a registry ships and sets
//! `NIGHTSHIFT_TEST_PEERS_REQUIRED`, a missing one fails the test instead: skipped is not
//! passed.

use std::io::Write;

/// Prints `skipped TEST: why` for the calling test.
pub fn skipped(why: &str) {
    let test = std::thread::current()
        .name()
        .unwrap_or("a test")
        .to_string();
    let _ = writeln!(std::io::stderr(), "skipped {test}: {why}");
}

/// The file the environment variable `var` names, or `None` after the skip line, which
/// says the test needs `what` and that `script` installs it. Where peers are required
/// (scripts/test.sh), a missing one fails the test with the same words.
pub fn installed(var: &str, what: &str, script: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(path) if std::path::Path::new(&path).is_file() => Some(path),
        _ => {
            let why = format!(
                "needs {what}; run `eval \"$({script})\"` (scripts/test.sh does) to install it \
                 and set {var}"
            );
            if std::env::var_os("NIGHTSHIFT_TEST_PEERS_REQUIRED").is_some() {
                panic!("{why}");
            }
            skipped(&why);
            None
        }
    }
}
