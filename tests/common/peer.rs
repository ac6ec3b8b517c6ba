//! A Python peer a test starts from scripts/ (an SMTP server, an OTLP receiver): it prints
//! its port on its first line and writes what it received to a log, one JSON value a line.
//! Killed when dropped.

use std::io::BufRead;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use serde_json::Value;
use tempfile::TempDir;

pub struct PythonPeer {
    child: Child,
    pub port: u16,
    log: PathBuf,
}

impl Drop for PythonPeer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl PythonPeer {
    /// Starts `scripts/SCRIPT --log DIR/LOG ARGS…` with the Python peers' interpreter;
    /// `None` (after the skip line naming `what`) when they are not installed.
    pub fn start(dir: &TempDir, script: &str, what: &str, args: &[&str]) -> Option<Self> {
        let python =
            super::skip::installed("NIGHTSHIFT_TEST_A2A_PYTHON", what, "scripts/a2a-peers.sh")?;
        let log = dir.path().join(format!("{script}.jsonl"));
        let script = format!("{}/scripts/{script}", env!("CARGO_MANIFEST_DIR"));
        let mut child = Command::new(python)
            .arg(script)
            .arg("--log")
            .arg(&log)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the peer");
        let mut port = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut port)
            .unwrap();
        let port = port.trim().parse().expect("the peer's port");
        Some(Self { child, port, log })
    }

    /// What it wrote to its log so far, in order.
    pub fn lines(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }
}
