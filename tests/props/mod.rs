//! Shared by the property tests (`tests/properties*.rs`): the case budget, where proptest
//! keeps the failures it finds, and the committed corpus of interesting inputs.
//!
//! Budget: every property runs `PROPTEST_CASES` cases when that is set (scripts/fuzz.sh
//! sets it high), else its own small default, so `cargo test` stays quick. A property that
//! costs much more a case than the others (a database round trip, an HTTP request through
//! the router, a brute-force walk) divides `PROPTEST_CASES` by its `weight`.
//!
//! Failures: proptest records the seed of each failure it finds in
//! `tests/proptest-regressions/<test file>.txt` and replays those seeds first on every later
//! run. Commit those files.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use proptest::strategy::Strategy;
use proptest::test_runner::{Config, FileFailurePersistence, TestCaseError, TestRunner};

/// Cases for a property: `PROPTEST_CASES / weight` (at least `short`) when the variable
/// is set, else `short`.
pub fn cases(short: u32, weight: u32) -> u32 {
    match std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.trim().parse::<u32>().ok())
    {
        Some(n) => (n / weight.max(1)).max(short.min(n)).max(1),
        None => short,
    }
}

/// A proptest configuration with [`cases`], keeping failures in the file `regressions`.
pub fn config(short: u32, weight: u32, regressions: &'static str) -> Config {
    Config {
        cases: cases(short, weight),
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(regressions))),
        // Shrinking an expensive case thousands of times would outlast the run.
        max_shrink_iters: 512,
        ..Config::default()
    }
}

/// Runs a property outside the `proptest!` macro, for one whose cases share a fixture (a
/// database, a router) that the test builds first and drops at its end.
pub fn check<S: Strategy>(
    name: &'static str,
    config: Config,
    strategy: S,
    test: impl Fn(S::Value) -> Result<(), TestCaseError>,
) {
    let mut config = config;
    config.test_name = Some(name);
    let mut runner = TestRunner::new(config);
    if let Err(err) = runner.run(&strategy, test) {
        panic!("{name}: {err}");
    }
}

pub fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus")
}

/// The inputs of a one-input-per-line corpus file (`tests/corpus/NAME`).
///
/// Format: UTF-8 text, one input per line. A line starting with `# ` (hash, space) is a
/// comment and blank lines are skipped (the empty input is always replayed by the test
/// itself). Escapes, so that any string fits on one line: `\\` a backslash, `\n`, `\r`,
/// `\t`, `\0`, `\u{HEX}` any character, `\s` a space (to keep one at a line's end), and
/// `\R{N}{TEXT}` TEXT repeated N times (a 10 000-character word in a few bytes). Any other
/// backslash is kept as it is.
pub fn corpus_lines(name: &str) -> Vec<String> {
    let path = corpus_dir().join(name);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("read corpus {}: {e}", path.display()));
    text.lines()
        .filter(|l| !l.is_empty() && !l.starts_with("# "))
        .map(unescape)
        .collect()
}

/// Every file in `tests/corpus/DIR`, by name, as raw bytes (one input per file).
pub fn corpus_files(dir: &str) -> Vec<(String, Vec<u8>)> {
    let path = corpus_dir().join(dir);
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(&path)
        .unwrap_or_else(|e| panic!("read corpus {}: {e}", path.display()))
        .map(|entry| {
            let entry = entry.unwrap();
            (
                entry.file_name().to_string_lossy().into_owned(),
                std::fs::read(entry.path()).unwrap(),
            )
        })
        .collect();
    files.sort();
    files
}

/// Decodes the escapes of [`corpus_lines`].
pub fn unescape(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(i) = rest.find('\\') {
        out.push_str(&rest[..i]);
        let tail = &rest[i + 1..];
        let mut chars = tail.chars();
        let (decoded, used): (Option<String>, usize) = match chars.next() {
            Some('\\') => (Some("\\".into()), 1),
            Some('n') => (Some("\n".into()), 1),
            Some('r') => (Some("\r".into()), 1),
            Some('t') => (Some("\t".into()), 1),
            Some('0') => (Some("\0".into()), 1),
            Some('s') => (Some(" ".into()), 1),
            Some('u') if tail.starts_with("u{") => match tail.find('}') {
                Some(end) => (
                    u32::from_str_radix(&tail[2..end], 16)
                        .ok()
                        .and_then(char::from_u32)
                        .map(String::from),
                    end + 1,
                ),
                None => (None, 0),
            },
            Some('R') if tail.starts_with("R{") => repeat(tail),
            _ => (None, 0),
        };
        match decoded {
            Some(text) => {
                out.push_str(&text);
                rest = &tail[used..];
            }
            None => {
                out.push('\\');
                rest = tail;
            }
        }
    }
    out.push_str(rest);
    out
}

/// `R{N}{TEXT}` → TEXT N times, and the bytes read.
fn repeat(tail: &str) -> (Option<String>, usize) {
    let Some(count_end) = tail.find('}') else {
        return (None, 0);
    };
    let Ok(count) = tail[2..count_end].parse::<usize>() else {
        return (None, 0);
    };
    let body = &tail[count_end + 1..];
    if !body.starts_with('{') {
        return (None, 0);
    }
    // The closing brace, past any `\u{…}` inside.
    let mut body_end = None;
    let mut i = 1;
    while i < body.len() {
        if body[i..].starts_with("\\u{") {
            i += body[i..].find('}').unwrap_or(body.len() - i);
        } else if body[i..].starts_with('}') {
            body_end = Some(i);
            break;
        }
        i += body[i..].chars().next().map_or(1, char::len_utf8);
    }
    let Some(body_end) = body_end else {
        return (None, 0);
    };
    let text = unescape(&body[1..body_end]);
    (Some(text.repeat(count)), count_end + 1 + body_end + 1)
}

#[test]
fn corpus_escapes_decode() {
    assert_eq!(unescape(r"a\\b\n\0\u{1F600}\s"), "a\\b\n\0\u{1F600} ");
    assert_eq!(unescape(r"\R{3}{ab}c"), "abababc");
    assert_eq!(unescape(r"\R{2}{\u{301}x}!"), "\u{301}x\u{301}x!");
    assert_eq!(unescape(r"\q \u{zz} \R{x}{y}"), r"\q \u{zz} \R{x}{y}");
}
