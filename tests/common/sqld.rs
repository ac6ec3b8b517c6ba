//! A real libSQL server (sqld) on 127.0.0.1 for a test, when this machine has one.
//!
//! No package registry ships sqld, so the project cannot install it: a test that needs
//! one runs when `NIGHTSHIFT_TEST_SQLD` names a sqld binary, and otherwise prints one
//! line saying it was skipped and why, and returns (it neither fails nor passes
//! silently). A URL alone would not do: these tests kill, restart and configure the
//! server they use, and each needs a database of its own.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use nightshift::config::Config;

/// The variable naming the sqld binary the tests start.
pub const SQLD_VAR: &str = "NIGHTSHIFT_TEST_SQLD";

/// A running sqld, stopped when dropped; the data folder it made for itself and its log
/// are removed then (a scale-out scenario leaves hundreds of megabytes there).
pub struct Sqld {
    pub url: String,
    pub pid: String,
    /// The server's process, waited for once it is stopped.
    child: Option<std::process::Child>,
    /// sqld's own log (stdout and stderr).
    pub log: PathBuf,
    /// Its data folder.
    data_dir: PathBuf,
    /// Whether the data folder was made here (the test gave none), and the drop
    /// removes it.
    made_data_dir: bool,
    /// The logs of the servers [`Sqld::restart`] replaced, removed with the last one's.
    old_logs: Vec<PathBuf>,
}

/// The sqld binary `NIGHTSHIFT_TEST_SQLD` names, or `None` after printing the one line
/// that says the calling test is skipped and why. The line goes to the process's stderr
/// itself, past the test harness's capture, so a skip is always seen.
pub fn binary() -> Option<PathBuf> {
    let why = match std::env::var_os(SQLD_VAR) {
        Some(path) if PathBuf::from(&path).is_file() => return Some(PathBuf::from(path)),
        Some(path) => format!("{SQLD_VAR}={} is not a file", PathBuf::from(path).display()),
        None => format!(
            "needs a libSQL server (sqld), which no package registry ships; \
             set {SQLD_VAR} to a sqld binary to run it"
        ),
    };
    let test = std::thread::current()
        .name()
        .unwrap_or("a test")
        .to_string();
    let _ = writeln!(std::io::stderr(), "skipped {test}: {why}");
    None
}

/// A port nothing listens on now, on 127.0.0.1.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port on 127.0.0.1")
        .port()
}

impl Sqld {
    /// A fresh server, or `None` (the skip line printed) when the machine has no sqld.
    pub fn start() -> Option<Sqld> {
        Self::start_with_env(&[])
    }

    /// Starts sqld with extra environment, e.g. `SQLD_AUTH_JWT_KEY_FILE`.
    pub fn start_with_env(env: &[(&str, &str)]) -> Option<Sqld> {
        Self::start_with(env, &[])
    }

    /// Starts sqld with extra environment and arguments `-d DATA_DIR` (the server's data
    /// folder, kept) and `-p PORT` (a server started again on the same port and data),
    /// or returns `None` when the machine has no sqld.
    pub fn start_with(env: &[(&str, &str)], args: &[&str]) -> Option<Sqld> {
        let binary = binary()?;
        let value = |flag: &str| {
            args.iter()
                .position(|arg| *arg == flag)
                .map(|at| args.get(at + 1).copied().expect("a value after the flag"))
        };
        let data_dir = value("-d").map(PathBuf::from);
        let port = value("-p").map(|port| port.parse().expect("a port number"));
        Some(Self::spawn(&binary, env, data_dir.as_deref(), port))
    }

    /// Starts `binary` on `data_dir` (a new folder when `None`) and `port` (a free one
    /// when `None`), and waits until it answers its health check.
    fn spawn(
        binary: &std::path::Path,
        env: &[(&str, &str)],
        data_dir: Option<&std::path::Path>,
        port: Option<u16>,
    ) -> Sqld {
        let made_data_dir = data_dir.is_none();
        let data_dir = match data_dir {
            Some(dir) => dir.to_path_buf(),
            None => tempfile::Builder::new()
                .prefix("nightshift-sqld-")
                .tempdir()
                .expect("a data folder for sqld")
                .keep(),
        };
        let port = port.unwrap_or_else(free_port);
        let log =
            std::env::temp_dir().join(format!("nightshift-sqld-{port}-{}.log", rand_suffix()));
        let log_file = std::fs::File::create(&log).expect("sqld's log file");
        let child = Command::new(binary)
            .arg("--http-listen-addr")
            .arg(format!("127.0.0.1:{port}"))
            .arg("--db-path")
            .arg(data_dir.join("data.sqld"))
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(log_file.try_clone().expect("sqld's log file"))
            .stderr(log_file)
            .spawn()
            .unwrap_or_else(|err| panic!("start {}: {err}", binary.display()));
        let url = format!("http://127.0.0.1:{port}");
        let server = Sqld {
            url,
            pid: child.id().to_string(),
            child: Some(child),
            log,
            data_dir,
            made_data_dir,
            old_logs: Vec::new(),
        };
        for _ in 0..300 {
            if probe(&server.url, "GET", "/health", "").starts_with("HTTP/1.1 200") {
                return server;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!(
            "sqld did not answer on {} within 15 s:\n{}",
            server.url,
            server.report()
        );
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
        let port: u16 = self.url.rsplit(':').next().unwrap().parse().unwrap();
        let binary = binary().expect("the sqld this server was started from");
        if let Some(mut old) = self.child.take() {
            let _ = old.wait();
        }
        let mut back = Self::spawn(&binary, &[], Some(&self.data_dir), Some(port));
        self.old_logs
            .push(std::mem::replace(&mut self.log, back.log.clone()));
        self.pid = back.pid.clone();
        self.child = back.child.take();
        // The new server is this one now: its drop must not stop it.
        std::mem::forget(back);
    }
}

/// A few letters that keep two logs of one port apart.
fn rand_suffix() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.subsec_nanos());
    format!("{}-{nanos}", std::process::id())
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
        if let Some(mut child) = self.child.take() {
            let _ = child.wait();
        }
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
