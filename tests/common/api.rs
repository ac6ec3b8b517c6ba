//! The real API router served on 127.0.0.1:0 over a database in a temp dir, and a client.

use std::time::Duration;

use nightshift::api::Listening;
use nightshift::app::App;
use nightshift::config::Config;
use nightshift::tokens::NewToken;
use serde_json::Value;
use tempfile::TempDir;
use tokio_util::sync::CancellationToken;

pub struct TestApi {
    pub base: String,
    pub app: App,
    pub config: Config,
    pub client: reqwest::Client,
    stop: CancellationToken,
    task: Option<tokio::task::JoinHandle<()>>,
    pub dir: TempDir,
}

/// An answer: status, headers, and the body as JSON (`Value::Null` when it is not JSON).
pub struct Reply {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub body: Value,
}

impl TestApi {
    pub async fn start(tweak: impl FnOnce(&mut Config)) -> Self {
        let dir = TempDir::new().unwrap();
        let mut config = super::config_in(&dir);
        config.server.listen = "127.0.0.1:0".into();
        tweak(&mut config);
        let app = App::open(&config).await.expect("open the app");
        Self::serve(dir, config, app).await
    }

    /// The API over an app whose every time is `clock`'s (a test moves it by hand).
    pub async fn start_on(
        clock: std::sync::Arc<dyn nightshift::db::clock::Clock>,
        tweak: impl FnOnce(&mut Config),
    ) -> Self {
        let dir = TempDir::new().unwrap();
        let mut config = super::config_in(&dir);
        config.server.listen = "127.0.0.1:0".into();
        tweak(&mut config);
        let app = super::app_with(&config, Some(clock)).await;
        Self::serve(dir, config, app).await
    }

    pub async fn serve(dir: TempDir, config: Config, app: App) -> Self {
        nightshift::telemetry::install();
        let stop = CancellationToken::new();
        let listening =
            Listening::bind(&config.server, nightshift::api::router(&app, false, &stop))
                .await
                .expect("bind");
        let addr = listening.local_addr().unwrap();
        let task = tokio::spawn({
            let stop = stop.clone();
            async move { listening.serve(stop, Duration::from_secs(5)).await }
        });
        Self {
            base: format!("http://{addr}"),
            app,
            config,
            client: reqwest::Client::new(),
            stop,
            task: Some(task),
            dir,
        }
    }

    /// A new token's secret: a user's, or an admin's for `None`.
    pub async fn token(&self, user: Option<&str>) -> String {
        self.app
            .tokens()
            .create(&NewToken {
                user_id: user.map(str::to_string),
                name: None,
                expires_in_secs: None,
            })
            .await
            .unwrap()
            .secret
    }

    pub async fn call(
        &self,
        method: &str,
        path: &str,
        token: Option<&str>,
        body: Option<Value>,
    ) -> Reply {
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let mut request = self.client.request(method, format!("{}{path}", self.base));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.expect("send");
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let bytes = response.bytes().await.unwrap();
        Reply {
            status,
            headers,
            body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        }
    }

    /// Stops serving; requests in flight finish.
    pub async fn stop(mut self) {
        self.stop.cancel();
        if let Some(task) = self.task.take() {
            task.await.unwrap();
        }
    }
}

impl Drop for TestApi {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}
