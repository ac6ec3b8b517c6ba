//! Traces: OpenTelemetry spans of what the worker does — each run (`invoke_agent`), each
//! model call (`chat`) and tool call (`execute_tool`) in it, after the GenAI semantic
//! conventions; each search and each overnight pass; each webhook delivery — exported
//! over OTLP/HTTP by the SDK's batch processor when `[traces] otlp_endpoint` is set. A W3C
//! `traceparent` goes with each request to the runtime and each webhook, so what they do
//! joins the trace.
//!
//! Off (no endpoint), the global tracer is OpenTelemetry's no-op one: a span costs a few
//! allocations and nothing is kept, sent or put in a header.

use std::borrow::Cow;
use std::time::Duration;

use opentelemetry::propagation::{Injector, TextMapPropagator};
use opentelemetry::trace::{SpanKind, Status, TraceContextExt, Tracer};
use opentelemetry::{global, Context, KeyValue, Value};
use opentelemetry_otlp::{Protocol, WithExportConfig};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{Sampler, SdkTracerProvider};
use opentelemetry_sdk::Resource;

use crate::config::TracesConfig;

/// The instrumentation scope every span is recorded under.
const SCOPE: &str = "nightshift";

/// Spans being exported: the provider, flushed and stopped at shutdown.
pub struct Traces {
    provider: SdkTracerProvider,
}

#[derive(Debug, thiserror::Error)]
#[error("cannot export traces to `{endpoint}`: {reason}")]
pub struct TracesError {
    endpoint: String,
    reason: String,
}

/// Starts exporting spans as `config` says, as the process's tracer; `None` when no
/// endpoint is configured (spans then cost next to nothing and go nowhere).
pub fn install(config: &TracesConfig) -> Result<Option<Traces>, TracesError> {
    let Some(endpoint) = config.endpoint() else {
        return Ok(None);
    };
    // The exporter's blocking HTTP client may not be made (or dropped) on an async
    // runtime's thread: it is made on a thread of its own, and used from the batch
    // processor's.
    let provider = std::thread::scope(|scope| {
        scope
            .spawn(|| provider(config, endpoint.clone()))
            .join()
            .unwrap_or_else(|_| {
                Err(TracesError {
                    endpoint: endpoint.clone(),
                    reason: "the exporter could not be built".into(),
                })
            })
    })?;
    global::set_tracer_provider(provider.clone());
    Ok(Some(Traces { provider }))
}

fn provider(config: &TracesConfig, endpoint: String) -> Result<SdkTracerProvider, TracesError> {
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(endpoint.clone())
        .with_timeout(Duration::from_secs(config.timeout_secs))
        .build()
        .map_err(|err| TracesError {
            endpoint,
            reason: err.to_string(),
        })?;
    Ok(SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_sampler(Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(
            config.sample_ratio,
        ))))
        .with_resource(
            Resource::builder()
                .with_service_name(config.service_name.clone())
                .build(),
        )
        .build())
}

impl Traces {
    /// Sends every span ended so far; blocks until they are sent or the export times out
    /// (call it off the async runtime's threads).
    pub fn flush(&self) {
        if let Err(err) = self.provider.force_flush() {
            tracing::warn!(%err, "cannot send the last spans");
        }
    }

    /// Sends what is left and stops exporting; blocks as [`Traces::flush`] does.
    pub fn shutdown(&self) {
        if let Err(err) = self.provider.shutdown() {
            tracing::warn!(%err, "cannot send the last spans");
        }
    }
}

/// A started span, carried as the context its children start under. Ended by
/// [`SpanScope::end`], or when the last context holding it is dropped.
pub struct SpanScope {
    cx: Context,
}

impl SpanScope {
    /// A span named `name` under the current context's span (a new trace when none).
    pub fn start(
        name: impl Into<Cow<'static, str>>,
        kind: SpanKind,
        attributes: Vec<KeyValue>,
    ) -> Self {
        Self::start_under(&Context::current(), name, kind, attributes)
    }

    /// A span named `name` under `parent`'s span.
    pub fn start_under(
        parent: &Context,
        name: impl Into<Cow<'static, str>>,
        kind: SpanKind,
        attributes: Vec<KeyValue>,
    ) -> Self {
        let tracer = global::tracer(SCOPE);
        let span = tracer
            .span_builder(name)
            .with_kind(kind)
            .with_attributes(attributes)
            .start_with_context(&tracer, parent);
        Self {
            cx: parent.with_span(span),
        }
    }

    /// The context whose span this is: what its children start under.
    pub fn context(&self) -> &Context {
        &self.cx
    }

    pub fn set(&self, key: &'static str, value: impl Into<Value>) {
        self.cx.span().set_attribute(KeyValue::new(key, value));
    }

    /// [`SpanScope::set`] under a key made at run time.
    pub fn set_key(&self, key: String, value: impl Into<Value>) {
        self.cx.span().set_attribute(KeyValue::new(key, value));
    }

    /// Marks the span failed: its status says `reason`, `error.type` its kind.
    pub fn fail(&self, kind: &'static str, reason: impl Into<Cow<'static, str>>) {
        let span = self.cx.span();
        span.set_attribute(KeyValue::new("error.type", kind));
        span.set_status(Status::error(reason));
    }

    pub fn end(self) {
        self.cx.span().end();
    }
}

/// The W3C trace headers (`traceparent`, and `tracestate` when there is one) naming the
/// current context's span, for a request that joins its trace; none when traces are off.
/// A trace the sampler left out is still named, flagged not sampled, so the receiver
/// leaves it out too.
pub fn trace_headers() -> Vec<(&'static str, String)> {
    let cx = Context::current();
    if !cx.span().span_context().is_valid() {
        return Vec::new();
    }
    let mut headers = Headers(Vec::new());
    TraceContextPropagator::new().inject_context(&cx, &mut headers);
    headers.0
}

struct Headers(Vec<(&'static str, String)>);

impl Injector for Headers {
    fn set(&mut self, key: &str, value: String) {
        // The W3C propagator writes these two alone.
        let name = match key {
            "traceparent" => "traceparent",
            "tracestate" => "tracestate",
            _ => return,
        };
        self.0.push((name, value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn with_no_span_recorded_no_header_is_sent() {
        let span = SpanScope::start("nothing", SpanKind::Internal, Vec::new());
        let _attached = span.context().clone().attach();
        assert!(trace_headers().is_empty());
    }
}
