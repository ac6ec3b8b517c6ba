//! The API across the worker's life: readiness that follows the database, metrics that
//! move with runs, and a stop that finishes the requests in flight.

mod common;

use std::sync::Arc;
use std::time::Duration;

use axum::routing::post;
use axum::Json;
use common::api::TestApi;
use common::sqld::Sqld;
use nightshift::api::Listening;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

/// `/readyz` is 503 while the libSQL server does not answer (stopped mid-test with
/// SIGSTOP), saying which check failed, and 200 again once it is back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readiness_follows_the_database() {
    let Some(sqld) = Sqld::start() else {
        return;
    };
    let mut config = sqld.config();
    config.server.listen = "127.0.0.1:0".into();
    let app = nightshift::app::App::open(&config).await.unwrap();
    let api = TestApi::serve(tempfile::TempDir::new().unwrap(), config, app).await;
    let ready = api.call("GET", "/readyz", None, None).await;
    assert_eq!(ready.status, 200, "{}", ready.body);

    let stop = |signal: &str| {
        std::process::Command::new("kill")
            .args([signal, &sqld.pid])
            .status()
            .unwrap();
    };
    stop("-STOP");
    let down = api.call("GET", "/readyz", None, None).await;
    stop("-CONT");
    assert_eq!(down.status, 503, "{}", down.body);
    assert_eq!(down.body["ready"], false);
    let database = down.body["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "database")
        .unwrap();
    assert_eq!(database["ok"], false, "{database}");
    // Back: ready again (a few tries while the server catches up).
    let mut status = 0;
    for _ in 0..50 {
        status = api.call("GET", "/readyz", None, None).await.status;
        if status == 200 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(status, 200);
    // Liveness never depended on it.
    assert_eq!(api.call("GET", "/healthz", None, None).await.status, 200);
}

/// A real worker and its API in one process: after a run, `/metrics` counts it, and
/// readiness includes the scheduler loop's tick.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_move_with_a_run() {
    async fn goal(Json(_body): Json<Value>) -> Json<Value> {
        Json(json!({"output": "done"}))
    }
    let runtime = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let runtime_url = format!("http://{}/goal", runtime.local_addr().unwrap());
    tokio::spawn(async move {
        axum::serve(runtime, axum::Router::new().route("/goal", post(goal)))
            .await
            .unwrap()
    });
    let dir = tempfile::TempDir::new().unwrap();
    let mut config = common::config_in(&dir);
    config.runtime.kind = nightshift::config::RuntimeKind::Http;
    config.runtime.url = runtime_url;
    config.scheduler.min_interval_secs = 1;
    // A free port, found by binding one and letting it go.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    config.server.listen = format!("127.0.0.1:{port}");
    let app = nightshift::app::App::open(&config).await.unwrap();
    let token = app
        .tokens()
        .create(&nightshift::tokens::NewToken {
            user_id: Some("u".into()),
            name: None,
            expires_in_secs: None,
        })
        .await
        .unwrap()
        .secret;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let daemon = tokio::spawn({
        let app = app.clone();
        async move {
            nightshift::daemon::run(&app, async {
                let _ = stopped.await;
            })
            .await
        }
    });
    let base = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::new();
    let mut schedule = None;
    for _ in 0..100 {
        let added = client
            .post(format!("{base}/v1/schedules"))
            .bearer_auth(&token)
            .json(&json!({"goal": "count", "every": "1h"}))
            .send()
            .await;
        if let Ok(added) = added {
            schedule = Some(added.json::<Value>().await.unwrap());
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let id = schedule.unwrap()["schedule_id"]
        .as_str()
        .unwrap()
        .to_string();
    client
        .post(format!("{base}/v1/schedules/{id}/run-now"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    let mut counted = 0.0;
    for _ in 0..100 {
        let text = client
            .get(format!("{base}/metrics"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let scrape =
            prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).unwrap();
        counted = scrape
            .samples
            .iter()
            .filter(|s| {
                s.metric == "nightshift_runs_total" && s.labels.get("status") == Some("succeeded")
            })
            .map(|s| match s.value {
                prometheus_parse::Value::Counter(v) | prometheus_parse::Value::Untyped(v) => v,
                _ => 0.0,
            })
            .sum();
        if counted >= 1.0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(counted >= 1.0, "no run counted");
    let ready: Value = client
        .get(format!("{base}/readyz"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(ready["ready"], true, "{ready}");
    assert!(ready["checks"]
        .as_array()
        .unwrap()
        .iter()
        .any(|c| c["name"] == "scheduler" && c["ok"] == true));
    stop.send(()).unwrap();
    daemon.await.unwrap().unwrap();
    // Stopped: nothing listens any more.
    assert!(client.get(format!("{base}/healthz")).send().await.is_err());
}

/// On stop, requests in flight finish and are answered; new connections are refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_finishes_requests_in_flight_and_refuses_new_ones() {
    let (entered, release) = (
        Arc::new(tokio::sync::Notify::new()),
        Arc::new(tokio::sync::Notify::new()),
    );
    let slow = {
        let (entered, release) = (entered.clone(), release.clone());
        move || {
            let (entered, release) = (entered.clone(), release.clone());
            async move {
                entered.notify_one();
                // In flight until the test has seen the server stop taking connections.
                release.notified().await;
                "finished"
            }
        }
    };
    let router = axum::Router::new().route("/slow", axum::routing::get(slow));
    let config = nightshift::config::ServerConfig {
        listen: "127.0.0.1:0".into(),
        ..Default::default()
    };
    let listening = Listening::bind(&config, router).await.unwrap();
    let addr = listening.local_addr().unwrap();
    let stop = CancellationToken::new();
    // A grace period far past the wait for the listener to close below: a server that kept
    // its listener until the request in flight ended could not pass by running out of it.
    let server = tokio::spawn({
        let stop = stop.clone();
        async move { listening.serve(stop, Duration::from_secs(120)).await }
    });
    let in_flight = tokio::spawn(async move {
        reqwest::get(format!("http://{addr}/slow"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    });
    entered.notified().await;
    stop.cancel();
    // The listener closes while the request is still in flight: a connection is refused.
    // Polled until then, each try bounded (a listener kept but no longer accepting queues
    // connections, then leaves them hanging), the whole within a deadline.
    let refused = async {
        loop {
            let connect = tokio::net::TcpStream::connect(addr);
            if let Ok(Err(_)) = tokio::time::timeout(Duration::from_secs(1), connect).await {
                return;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(30), refused)
        .await
        .expect("new connections were still taken after the stop");
    assert!(
        !in_flight.is_finished(),
        "the request ended before its answer"
    );
    release.notify_one();
    assert_eq!(in_flight.await.unwrap(), "finished");
    server.await.unwrap();
    assert!(tokio::net::TcpStream::connect(addr).await.is_err());
}
