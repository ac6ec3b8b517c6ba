//! A real libSQL server (sqld from ../shared/tools/sqld) on 127.0.0.1 for a test.

use std::path::PathBuf;
use std::process::Command;

use nightshift::config::Config;

/// A running sqld, stopped when dropped.
pub struct Sqld {
    pub url: String,
    pub pid: String,
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
        }
    }

    pub fn config(&self) -> Config {
        let mut config = Config::default();
        config.database.path = self.url.clone();
        config
    }
}

impl Sqld {
    /// Stops the server and waits until it is gone.
    pub fn stop(self) {
        let _ = Command::new("kill").arg(&self.pid).status();
        let addr = self.url.trim_start_matches("http://").to_string();
        for _ in 0..600 {
            if std::net::TcpStream::connect(&addr).is_err() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        std::mem::forget(self);
    }
}

impl Drop for Sqld {
    fn drop(&mut self) {
        let _ = Command::new("kill").arg(&self.pid).status();
    }
}
