//! The edge a client reaches without a token, against the real server on 127.0.0.1:0:
//! connections that send nothing are dropped and capped, made-up methods and paths add no
//! metric series, and `server.max_concurrent_requests` bounds the whole server, not each
//! route.

mod common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::api::TestApi;
use nightshift::telemetry::{http_method_label, HTTP_METHOD_LABELS};
use proptest::prelude::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Idle sockets the first test opens (it opens fewer when the open-file limit has no room).
const IDLE_SOCKETS: usize = 2_000;

/// A bound on waiting for something that happens within a second or so: a failure, not a
/// measured duration.
const PATIENCE: Duration = Duration::from_secs(60);

/// 2,000 connections that never send a byte leave `/healthz` answering, and the server
/// closes every one of them after `server.header_read_timeout_secs`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_connections_leave_the_api_up_and_are_dropped() {
    let files = raise_open_file_limit();
    let api = TestApi::start(|c| c.server.header_read_timeout_secs = 1).await;
    let addr = address(&api);
    let wanted = idle_socket_count(files);
    assert!(
        wanted >= 200,
        "the open-file limit leaves room for {wanted} sockets"
    );
    let mut idle = Vec::with_capacity(wanted);
    for _ in 0..wanted {
        idle.push(TcpStream::connect(&addr).await.expect("connect"));
    }

    assert_eq!(healthz(&api).await, 200, "beside {wanted} idle connections");

    let all_closed = tokio::time::timeout(PATIENCE, async {
        for socket in &mut idle {
            assert_closed_by_server(socket).await;
        }
    })
    .await;
    assert!(
        all_closed.is_ok(),
        "idle connections kept open past the header timeout"
    );
    assert_eq!(healthz(&api).await, 200, "after the idle connections");
}

/// `/healthz`'s status, on a connection of its own: a kept-alive one from an earlier call
/// may be closing (idle past the header timeout) as it is reused.
async fn healthz(api: &TestApi) -> u16 {
    let reply = reqwest::get(format!("{}/healthz", api.base))
        .await
        .expect("/healthz answers");
    reply.status().as_u16()
}

/// Past `server.max_connections`, a new connection is closed as it arrives (a request on
/// it too) while the accept loop lives on: once the open ones close, the server serves.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_past_the_cap_are_closed_and_the_server_recovers() {
    let api = TestApi::start(|c| {
        c.server.max_connections = 8;
        // Long enough that only the cap can close a connection during this test.
        c.server.header_read_timeout_secs = 3600;
    })
    .await;
    let addr = address(&api);
    let mut open = Vec::new();
    for _ in 0..8 {
        open.push(TcpStream::connect(&addr).await.expect("connect"));
    }
    let mut ninth = TcpStream::connect(&addr).await.expect("connect");
    let closed = tokio::time::timeout(PATIENCE, assert_closed_by_server(&mut ninth)).await;
    assert!(closed.is_ok(), "a connection past the cap was kept open");
    let refused = reqwest::get(format!("{}/healthz", api.base)).await;
    assert!(refused.is_err(), "a request past the cap was served");

    drop(open);
    let mut status = None;
    for _ in 0..400 {
        if let Ok(reply) = reqwest::get(format!("{}/healthz", api.base)).await {
            status = Some(reply.status().as_u16());
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(
        status,
        Some(200),
        "the server serves again once connections close"
    );
}

/// Hundreds of made-up methods, lower-case standard ones, and unknown paths (beside
/// routes, under /v1, under /mcp) leave the request metrics' labels within a closed set.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn made_up_methods_and_paths_add_no_metric_series() {
    let api = TestApi::start(|_| {}).await;
    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    for _ in 0..300 {
        let method = made_up_method(&mut seed);
        api.call(&method, "/healthz", None, None).await;
    }
    for method in ["get", "Post", "CONNECTX", "TRACE", "PROPFIND"] {
        api.call(method, "/healthz", None, None).await;
    }
    for i in 0..100 {
        api.call("GET", &format!("/zqx-{i}"), None, None).await;
        api.call("POST", &format!("/v1/zqx/{i}"), None, None).await;
        api.call("GET", &format!("/healthz/zqx{i}"), None, None)
            .await;
        api.call("GET", &format!("/mcp/zqx{i}"), None, None).await;
    }

    let (methods, routes) = http_labels(&api).await;
    let closed: BTreeSet<String> = HTTP_METHOD_LABELS.iter().map(|m| m.to_string()).collect();
    let outside: Vec<&String> = methods.difference(&closed).collect();
    assert!(
        outside.is_empty(),
        "{} method labels outside the closed set, such as {:?}",
        outside.len(),
        &outside[..outside.len().min(5)]
    );
    assert!(methods.contains("other"), "{methods:?}");
    assert!(routes.contains("unmatched"), "{routes:?}");
    let echoed: Vec<&String> = routes.iter().filter(|r| r.contains("zqx")).collect();
    assert!(echoed.is_empty(), "paths became route labels: {echoed:?}");
}

proptest! {
    /// Any method at all is counted under one of the closed set's labels, and under its
    /// own name exactly when it is one of the standard methods.
    #[test]
    fn every_method_gets_a_closed_label(method in prop_oneof![
        any::<String>(),
        "[!#$%&'*+.^_`|~0-9A-Za-z-]{1,40}",
        proptest::sample::select(HTTP_METHOD_LABELS.to_vec()).prop_map(str::to_string),
    ]) {
        let label = http_method_label(&method);
        prop_assert!(HTTP_METHOD_LABELS.contains(&label));
        let standard = HTTP_METHOD_LABELS[..7].contains(&method.as_str());
        prop_assert_eq!(label == method, standard || method == "other");
        if !standard {
            prop_assert_eq!(label, "other");
        }
    }
}

/// With `max_concurrent_requests = 2`, three requests held open on three routes and
/// nothing else: two take the slots and the third is answered 503 at once. With the two
/// still in flight, a fourth request is turned away too; once they end, it is served.
///
/// Only the held requests run until one is refused, so which two hold the slots is known
/// (the unanswered ones): a probe sent beside them could take a slot itself and leave one
/// of them refused instead, and then nothing would fill the server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_request_limit_bounds_the_whole_server() {
    let api = TestApi::start(|c| {
        c.server.max_concurrent_requests = 2;
        c.server.request_timeout_secs = 600;
    })
    .await;
    let alice = api.token(Some("alice")).await;
    let bob = api.token(Some("bob")).await;
    let addr = address(&api);
    let mut held = Vec::new();
    for path in ["/v1/notes", "/v1/search", "/v1/schedules"] {
        held.push(slow_body(&addr, path, &alice).await);
    }

    let (answered, refused) = tokio::time::timeout(PATIENCE, first_answer(&mut held))
        .await
        .expect("none of three requests held open beside a limit of two was refused");
    assert!(refused.starts_with("HTTP/1.1 503"), "{refused}");
    assert!(
        refused.to_ascii_lowercase().contains("\r\nretry-after:"),
        "{refused}"
    );
    assert!(refused.contains("\"code\":\"unavailable\""), "{refused}");
    assert!(refused.contains("max_concurrent_requests"), "{refused}");
    held.remove(answered);

    let reply = api.call("GET", "/v1/schedules", Some(&bob), None).await;
    assert_eq!(reply.status, 503, "served beside two requests in flight");
    assert_eq!(reply.body["error"]["code"], "unavailable");
    assert!(reply.headers.contains_key("retry-after"));

    drop(held);
    let mut status = 0;
    for _ in 0..200 {
        status = api
            .call("GET", "/v1/schedules", Some(&bob), None)
            .await
            .status;
        if status == 200 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(status, 200, "served again once the held requests end");
}

/// Waits for the first of three sockets the server answers: its index and the answer's
/// head and JSON body.
async fn first_answer(held: &mut [TcpStream]) -> (usize, String) {
    let [a, b, c] = held else {
        panic!("three held requests")
    };
    tokio::select! {
        answer = read_answer(a) => (0, answer),
        answer = read_answer(b) => (1, answer),
        answer = read_answer(c) => (2, answer),
    }
}

/// Reads an answer's head and small JSON body (up to its closing brace) from `socket`.
async fn read_answer(socket: &mut TcpStream) -> String {
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    while !answer.ends_with(b"}") {
        match socket.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => answer.extend_from_slice(&buf[..n]),
        }
    }
    String::from_utf8_lossy(&answer).into_owned()
}

fn address(api: &TestApi) -> String {
    api.base.trim_start_matches("http://").to_string()
}

/// Waits until the server closes `socket`, which it must do without answering.
async fn assert_closed_by_server(socket: &mut TcpStream) {
    let mut buf = [0u8; 256];
    match socket.read(&mut buf).await {
        Ok(0) | Err(_) => {}
        Ok(n) => panic!(
            "the server answered a connection that sent nothing: {}",
            String::from_utf8_lossy(&buf[..n])
        ),
    }
}

/// A POST on `path` whose JSON body is announced whole but only begun: the handler waits
/// for the rest as long as the socket stays open.
async fn slow_body(addr: &str, path: &str, token: &str) -> TcpStream {
    let mut socket = TcpStream::connect(addr).await.expect("connect");
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{{\"text\": \""
    );
    socket.write_all(head.as_bytes()).await.expect("write");
    socket
}

/// A method token no server knows, 1 to 40 of the characters HTTP allows in one.
fn made_up_method(seed: &mut u64) -> String {
    const TCHARS: &[u8] =
        b"!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    let mut next = || {
        // xorshift64: the same methods on every run.
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        *seed
    };
    let len = 1 + (next() % 40) as usize;
    let method: String = (0..len)
        .map(|_| TCHARS[(next() % TCHARS.len() as u64) as usize] as char)
        .collect();
    if HTTP_METHOD_LABELS.contains(&method.as_str()) {
        format!("X{method}")
    } else {
        method
    }
}

/// The method and route labels of the request metrics, from the server's `/metrics`.
async fn http_labels(api: &TestApi) -> (BTreeSet<String>, BTreeSet<String>) {
    let text = reqwest::get(format!("{}/metrics", api.base))
        .await
        .expect("scrape")
        .text()
        .await
        .expect("scrape");
    let scrape = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_string())))
        .expect("Prometheus text");
    let mut methods = BTreeSet::new();
    let mut routes = BTreeSet::new();
    for sample in scrape.samples.iter().filter(|s| {
        s.metric == "nightshift_http_requests_total"
            || s.metric
                .starts_with("nightshift_http_request_duration_seconds")
    }) {
        if let Some(method) = sample.labels.get("method") {
            methods.insert(method.to_string());
        }
        if let Some(route) = sample.labels.get("route") {
            routes.insert(route.to_string());
        }
    }
    (methods, routes)
}

/// Sockets the first test may open: each is two descriptors of this process (its end and
/// the server's), beside those the process holds already and a margin for the tests
/// running alongside.
fn idle_socket_count(files: Option<u64>) -> usize {
    let Some(files) = files else {
        return IDLE_SOCKETS;
    };
    let held = std::fs::read_dir("/proc/self/fd").map_or(64, |d| d.count()) as u64;
    let room = files.saturating_sub(held + 512) / 2;
    IDLE_SOCKETS.min(usize::try_from(room).unwrap_or(usize::MAX))
}

/// Raises this process's soft limit on open files to its hard limit (a shell often gives
/// 1,024), and returns the soft limit then in force; `None` where it is not known.
#[cfg(all(
    target_os = "linux",
    any(
        target_arch = "x86_64",
        target_arch = "aarch64",
        target_arch = "riscv64"
    )
))]
fn raise_open_file_limit() -> Option<u64> {
    /// `struct rlimit` with 64-bit `rlim_t`, as these targets have it.
    #[repr(C)]
    struct Rlimit {
        cur: u64,
        max: u64,
    }
    /// RLIMIT_NOFILE on these targets (asm-generic).
    const RLIMIT_NOFILE: i32 = 7;
    extern "C" {
        fn getrlimit(resource: i32, limit: *mut Rlimit) -> i32;
        fn setrlimit(resource: i32, limit: *const Rlimit) -> i32;
    }
    let mut limit = Rlimit { cur: 0, max: 0 };
    // SAFETY: `limit` is a valid, writable `struct rlimit` for the call.
    if unsafe { getrlimit(RLIMIT_NOFILE, &mut limit) } != 0 {
        return None;
    }
    if limit.cur < limit.max {
        let raised = Rlimit {
            cur: limit.max,
            max: limit.max,
        };
        // SAFETY: `raised` is a valid `struct rlimit`; a refusal leaves the limit as it was.
        if unsafe { setrlimit(RLIMIT_NOFILE, &raised) } == 0 {
            limit.cur = limit.max;
        }
    }
    // RLIM_INFINITY is all ones.
    (limit.cur != u64::MAX).then_some(limit.cur)
}

#[cfg(not(all(
    target_os = "linux",
    any(
        target_arch = "x86_64",
        target_arch = "aarch64",
        target_arch = "riscv64"
    )
)))]
fn raise_open_file_limit() -> Option<u64> {
    None
}
