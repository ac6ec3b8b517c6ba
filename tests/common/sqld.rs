//! A real libSQL server (sqld from ../shared/tools/sqld) on 127.0.0.1 for a test.

use std::path::PathBuf;
use std::process::Command;

use nightshift::config::Config;

/// A running sqld, stopped when dropped; the data folder it made for itself and its log
/// are removed then (a scale-out scenario leaves hundreds of megabytes there).
pub struct Sqld {
    pub url: String,
    pub pid: String,
    /// sqld's own log (stdout and stderr).
    pub log: PathBuf,
    /// Its data folder.
    data_dir: PathBuf,
    /// Whether `start-sqld.sh` made the data folder (the test gave none with `-d`), and
    /// the drop removes it.
    made_data_dir: bool,
    /// The logs of the servers [`Sqld::restart`] replaced, removed with the last one's.
    old_logs: Vec<PathBuf>,
}

impl Sqld {
    pub fn start() -> Sqld {
        Self::start_with_env(&[])
    }

    /// Starts sqld with extra environment, e.g. `SQLD_AUTH_JWT_KEY_FILE`.
    pub fn start_with_env(env: &[(&str, &str)]) -> Sqld {
        Self::start_with(env, &[])
    }

    /// Starts sqld with extra environment and `start-sqld.sh` arguments (`-p PORT`,
    /// `-d DB_DIR`: a server restarted on the same port and data).
    pub fn start_with(env: &[(&str, &str)], args: &[&str]) -> Sqld {
        let script =
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/tools/sqld/start-sqld.sh");
        let out = Command::new("bash")
            .arg(&script)
            .args(args)
            .envs(env.iter().copied())
            .output()
            .expect("run start-sqld.sh");
        assert!(
            out.status.success(),
            "start-sqld.sh failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let vars = String::from_utf8_lossy(&out.stdout).to_string();
        let get = |name: &str| {
            vars.split_whitespace()
                .chain(vars.lines())
                .find_map(|kv| kv.trim().strip_prefix(&format!("{name}=")))
                .map(|v| v.trim_matches(['\'', '"']).to_string())
                .unwrap_or_else(|| panic!("{name} missing from start-sqld.sh output: {vars}"))
        };
        Sqld {
            url: get("SQLD_URL"),
            pid: get("SQLD_PID"),
            log: PathBuf::from(get("SQLD_LOG")),
            data_dir: PathBuf::from(get("SQLD_DB_DIR")),
            made_data_dir: !args.contains(&"-d"),
            old_logs: Vec::new(),
        }
    }

    pub fn config(&self) -> Config {
        let mut config = Config::default();
        config.database.path = self.url.clone();
        config
    }
}

impl Sqld {
    /// What a failed scenario reports of the server: whether it still answers a health
    /// check, a read and a write transaction (a server that answers none is stalled as a
    /// whole; one that answers all but the workers is not stalled at all), and the end of
    /// its log.
    pub fn report(&self) -> String {
        let health = probe(&self.url, "GET", "/health", "");
        let read = probe(&self.url, "POST", "/v2/pipeline", SELECT_ONE);
        let write = probe(&self.url, "POST", "/v2/pipeline", WRITE_LOCK);
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        let tail = lines[lines.len().saturating_sub(30)..].join("\n");
        format!(
            "sqld (pid {}): health check: {health}\na read: {read}\nthe write lock: {write}\n\
             its log ({}) ends:\n{tail}",
            self.pid,
            self.log.display()
        )
    }

    /// Stops the server and waits until it is gone.
    pub fn stop(self) {
        drop(self);
    }

    /// True when the server shows sqld 0.24.33's write-lock stall (README, "Known
    /// issue"): it answers a read, and does not grant its write lock within 5 s.
    pub fn write_lock_stalled(&self) -> bool {
        let read = probe(&self.url, "POST", "/v2/pipeline", SELECT_ONE);
        let write = probe(&self.url, "POST", "/v2/pipeline", WRITE_LOCK);
        read.starts_with("HTTP/1.1 200") && write.starts_with("no answer")
    }

    /// What the first column of the first row of `sql` holds, as an integer; `None` when
    /// the server gave no such answer (read over raw HTTP, so it works from any thread).
    pub fn read_integer(&self, sql: &str) -> Option<i64> {
        let body = serde_json::json!({
            "baton": null,
            "requests": [{"type": "execute", "stmt": {"sql": sql}}, {"type": "close"}],
        })
        .to_string();
        let answer = probe(&self.url, "POST", "/v2/pipeline", &body);
        let (_, rest) = answer.split_once(r#""rows":[[{"type":"integer","value":""#)?;
        rest.split('"').next()?.parse().ok()
    }

    /// Kills the server (SIGKILL: stalled, it spins and may not stop on SIGTERM) and
    /// starts it again on the same port and data, as its operator would.
    pub fn restart(&mut self) {
        let _ = Command::new("kill").args(["-KILL", &self.pid]).status();
        wait_until_closed(&self.url);
        let port = self.url.rsplit(':').next().unwrap().to_string();
        let data_dir = self.data_dir.to_str().unwrap().to_string();
        let back = Self::start_with(&[], &["-d", &data_dir, "-p", &port]);
        assert_eq!(back.url, self.url, "sqld came back on another address");
        self.old_logs
            .push(std::mem::replace(&mut self.log, back.log.clone()));
        self.pid = back.pid.clone();
        // The new server is this one now: its drop must not stop it.
        std::mem::forget(back);
    }
}

const SELECT_ONE: &str =
    r#"{"baton":null,"requests":[{"type":"execute","stmt":{"sql":"SELECT 1"}},{"type":"close"}]}"#;
const WRITE_LOCK: &str = r#"{"baton":null,"requests":[{"type":"execute","stmt":{"sql":"BEGIN IMMEDIATE"}},{"type":"execute","stmt":{"sql":"ROLLBACK"}},{"type":"close"}]}"#;

/// Waits until nothing listens at the server's address any more.
fn wait_until_closed(url: &str) {
    let addr = url.trim_start_matches("http://");
    for _ in 0..600 {
        if std::net::TcpStream::connect(addr).is_err() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

impl Drop for Sqld {
    fn drop(&mut self) {
        let _ = Command::new("kill").arg(&self.pid).status();
        wait_until_closed(&self.url);
        if self.made_data_dir {
            let _ = std::fs::remove_dir_all(&self.data_dir);
        }
        // Kept when the test fails, for a look at what the server said.
        if !std::thread::panicking() {
            for log in self.old_logs.iter().chain([&self.log]) {
                let _ = std::fs::remove_file(log);
            }
        }
    }
}

/// One HTTP/1.1 request to the server with a 5 s limit: the status line and the start of
/// the body, or why there was none.
fn probe(url: &str, method: &str, path: &str, body: &str) -> String {
    use std::io::{Read, Write};
    let addr = url.trim_start_matches("http://");
    let limit = std::time::Duration::from_secs(5);
    let attempt = || -> std::io::Result<String> {
        let mut stream = std::net::TcpStream::connect(addr)?;
        stream.set_read_timeout(Some(limit))?;
        stream.set_write_timeout(Some(limit))?;
        write!(
            stream,
            "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )?;
        let mut answer = String::new();
        stream.read_to_string(&mut answer)?;
        let status = answer.lines().next().unwrap_or("(empty answer)");
        let body = answer.split_once("\r\n\r\n").map_or("", |(_, body)| body);
        Ok(format!(
            "{status} {}",
            body.chars().take(300).collect::<String>()
        ))
    };
    match attempt() {
        Ok(status) => status,
        Err(err) => format!("no answer ({err}; waited at most {limit:?})"),
    }
}
