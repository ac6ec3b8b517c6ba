//! Metrics, through the well-kept `metrics` facade: every module records what it does here,
//! by name, and `nightshift run` installs a Prometheus recorder that `/metrics` renders.
//! Without a recorder (the CLI, tests that install none) recording costs nothing.

use std::sync::OnceLock;
use std::time::Duration;

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

/// Latency buckets, seconds: from a fraction of a millisecond to a minute.
const LATENCY_BUCKETS: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
    60.0,
];
/// Run durations and lateness, seconds: from 10 ms to an hour.
const RUN_BUCKETS: &[f64] = &[
    0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0,
];

static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

/// Installs the process's Prometheus recorder (once; later calls get the same handle).
pub fn install() -> PrometheusHandle {
    HANDLE
        .get_or_init(|| {
            let builder = PrometheusBuilder::new()
                .set_buckets_for_metric(
                    Matcher::Suffix("_duration_seconds".into()),
                    LATENCY_BUCKETS,
                )
                .and_then(|b| {
                    b.set_buckets_for_metric(
                        Matcher::Full("nightshift_run_attempt_duration_seconds".into()),
                        RUN_BUCKETS,
                    )
                })
                .and_then(|b| {
                    b.set_buckets_for_metric(
                        Matcher::Full("nightshift_run_lateness_seconds".into()),
                        RUN_BUCKETS,
                    )
                })
                .expect("the bucket lists are not empty");
            let recorder = builder.build_recorder();
            let handle = recorder.handle();
            // Another recorder may be installed already (a test harness's): then this one
            // only renders what it is given, which is nothing. Said once, in the log.
            if metrics::set_global_recorder(recorder).is_err() {
                tracing::warn!("a metrics recorder was already installed; /metrics shows nothing");
            }
            describe_families();
            metrics::gauge!("nightshift_build_info", "version" => env!("CARGO_PKG_VERSION"))
                .set(1.0);
            handle
        })
        .clone()
}

/// Every family's help text (and unit), so `/metrics` passes `promtool check metrics`.
/// A family added without one here fails `tests/api_lifecycle.rs`'s linter check.
fn describe_families() {
    use metrics::{describe_counter, describe_gauge, describe_histogram, Unit};
    describe_gauge!(
        "nightshift_build_info",
        "Always 1; the version label is this binary's version"
    );
    describe_gauge!(
        "nightshift_due_backlog",
        "Occurrences due now and not yet claimed (active schedules whose next run has passed)"
    );
    describe_gauge!(
        "nightshift_leases_held",
        "Runs in progress, each held by a worker's lease"
    );
    describe_gauge!(
        "nightshift_outbox_messages",
        "Notifications in the outbox by status (pending, delivered, dead)"
    );
    describe_gauge!(
        "nightshift_embedding_queue_depth",
        "Chunks waiting for their vector"
    );
    describe_gauge!(
        "nightshift_uptime_seconds",
        Unit::Seconds,
        "Seconds since this process started"
    );
    describe_counter!("nightshift_runs_total", "Finished run attempts by status");
    describe_counter!(
        "nightshift_vectors_written_total",
        "Chunks embedded and their vectors stored (a user's chunk: its own and its sentences')"
    );
    describe_counter!(
        "nightshift_deliveries_total",
        "Notification delivery attempts by channel and outcome"
    );
    describe_counter!(
        "nightshift_consolidation_passes_total",
        "Overnight consolidation passes by pass and outcome"
    );
    describe_counter!(
        "nightshift_http_requests_total",
        "HTTP requests answered, by route template, method (a closed set) and status"
    );
    describe_counter!(
        "nightshift_mcp_tool_calls_total",
        "MCP tool calls served, by tool and outcome"
    );
    describe_histogram!(
        "nightshift_http_request_duration_seconds",
        Unit::Seconds,
        "Time to answer an HTTP request, by route template and method"
    );
    describe_histogram!(
        "nightshift_run_attempt_duration_seconds",
        Unit::Seconds,
        "Duration of one run attempt"
    );
    describe_histogram!(
        "nightshift_run_lateness_seconds",
        Unit::Seconds,
        "How late an occurrence started after its (nominal) time"
    );
    describe_histogram!(
        "nightshift_search_duration_seconds",
        Unit::Seconds,
        "Duration of one memory search"
    );
    describe_histogram!(
        "nightshift_context_duration_seconds",
        Unit::Seconds,
        "Duration of building one memory context"
    );
    describe_histogram!(
        "nightshift_db_write_gate_wait_duration_seconds",
        Unit::Seconds,
        "Time a write waited for the database's write gate"
    );
    describe_histogram!(
        "nightshift_mcp_tool_call_duration_seconds",
        Unit::Seconds,
        "Duration of one MCP tool call served, by tool"
    );
}

/// The installed recorder's text, if one is installed.
pub fn render() -> Option<String> {
    HANDLE.get().map(|h| {
        h.run_upkeep();
        h.render()
    })
}

pub fn run_finished(status: &'static str, attempt: Duration) {
    metrics::counter!("nightshift_runs_total", "status" => status).increment(1);
    metrics::histogram!("nightshift_run_attempt_duration_seconds").record(attempt.as_secs_f64());
}

/// How late an occurrence started, from its (nominal) time.
pub fn run_started(lateness: Duration) {
    metrics::histogram!("nightshift_run_lateness_seconds").record(lateness.as_secs_f64());
}

pub fn delivery(channel: &str, outcome: &'static str) {
    metrics::counter!(
        "nightshift_deliveries_total",
        "channel" => channel.to_string(),
        "outcome" => outcome
    )
    .increment(1);
}

pub fn vectors_written(n: usize) {
    metrics::counter!("nightshift_vectors_written_total").increment(n as u64);
}

pub fn search(took: Duration) {
    metrics::histogram!("nightshift_search_duration_seconds").record(took.as_secs_f64());
}

pub fn context(took: Duration) {
    metrics::histogram!("nightshift_context_duration_seconds").record(took.as_secs_f64());
}

pub fn write_gate_wait(waited: Duration) {
    metrics::histogram!("nightshift_db_write_gate_wait_duration_seconds")
        .record(waited.as_secs_f64());
}

pub fn consolidation_pass(pass: &'static str, outcome: &'static str) {
    metrics::counter!(
        "nightshift_consolidation_passes_total",
        "pass" => pass,
        "outcome" => outcome
    )
    .increment(1);
}

/// One HTTP request. `route` is the router's template for it (`/v1/notes/{note_id}`) or
/// `unmatched`, never the path the client sent; the method is counted by
/// [`http_method_label`]. Both from closed sets, so no client can add series.
pub fn http_request(route: &str, method: &str, status: u16, took: Duration) {
    let method = http_method_label(method);
    metrics::counter!(
        "nightshift_http_requests_total",
        "route" => route.to_string(),
        "method" => method,
        "status" => status.to_string()
    )
    .increment(1);
    metrics::histogram!(
        "nightshift_http_request_duration_seconds",
        "route" => route.to_string(),
        "method" => method
    )
    .record(took.as_secs_f64());
}

/// The methods counted by name; any other (HTTP lets a client make one up, and each
/// would be a series kept until restart) is counted as `other`.
pub const HTTP_METHOD_LABELS: [&str; 8] = [
    "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "other",
];

/// `method` as a metric label: itself when it is a method the API knows (methods are
/// case-sensitive: `get` is another method), else `other`.
pub fn http_method_label(method: &str) -> &'static str {
    HTTP_METHOD_LABELS
        .iter()
        .find(|known| **known == method)
        .copied()
        .unwrap_or("other")
}

/// One MCP tool call; `tool` is one of the server's tool names (never client text).
pub fn mcp_tool_call(tool: &str, outcome: &'static str, took: Duration) {
    metrics::counter!(
        "nightshift_mcp_tool_calls_total",
        "tool" => tool.to_string(),
        "outcome" => outcome
    )
    .increment(1);
    metrics::histogram!("nightshift_mcp_tool_call_duration_seconds", "tool" => tool.to_string())
        .record(took.as_secs_f64());
}

/// Values read from the database when `/metrics` is scraped.
#[derive(Debug, Clone, Default)]
pub struct Gauges {
    pub due_backlog: i64,
    pub leases_held: i64,
    pub outbox: Vec<(String, i64)>,
    pub embedding_queue: i64,
    pub uptime: Duration,
}

pub fn set_gauges(gauges: &Gauges) {
    metrics::gauge!("nightshift_due_backlog").set(gauges.due_backlog as f64);
    metrics::gauge!("nightshift_leases_held").set(gauges.leases_held as f64);
    for status in ["pending", "delivered", "dead"] {
        let n = gauges
            .outbox
            .iter()
            .find(|(s, _)| s == status)
            .map_or(0, |(_, n)| *n);
        metrics::gauge!("nightshift_outbox_messages", "status" => status).set(n as f64);
    }
    metrics::gauge!("nightshift_embedding_queue_depth").set(gauges.embedding_queue as f64);
    metrics::gauge!("nightshift_uptime_seconds").set(gauges.uptime.as_secs_f64());
}
