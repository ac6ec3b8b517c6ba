//! A run's span: `invoke_agent`, after the GenAI semantic conventions (the schedule is its
//! agent), from its claim to its end; the model's calls, the tools' and the searches nest
//! under it.

use opentelemetry::trace::SpanKind;
use opentelemetry::KeyValue;

use crate::memory::SessionKind;
use crate::runtime::GoalOutcome;
use crate::schedule::types::{Claim, RunStatus};
use crate::traces::SpanScope;

/// The span of a run: `invoke_agent`, after the GenAI semantic conventions, the schedule
/// its agent; the model's calls, the tools' and the searches nest under it.
pub(super) fn start(claim: &Claim) -> SpanScope {
    let schedule = &claim.schedule;
    let name = schedule.name.as_deref().unwrap_or(&schedule.schedule_id);
    let mut attributes = vec![
        KeyValue::new("gen_ai.operation.name", "invoke_agent"),
        KeyValue::new("gen_ai.agent.name", name.to_string()),
        KeyValue::new(
            "gen_ai.conversation.id",
            SessionKind::scheduled_session(&schedule.schedule_id),
        ),
        KeyValue::new("nightshift.run.id", claim.run_id.clone()),
        KeyValue::new("nightshift.schedule.id", schedule.schedule_id.clone()),
        KeyValue::new("nightshift.run.origin", claim.origin.as_str()),
    ];
    if let Some(agent) = &schedule.agent_id {
        attributes.push(KeyValue::new("gen_ai.agent.id", agent.clone()));
    }
    SpanScope::start_under(
        &opentelemetry::Context::new(),
        format!("invoke_agent {name}"),
        SpanKind::Internal,
        attributes,
    )
}

/// Ends a run's span with how it ended and the tokens it used.
pub(super) fn end(span: SpanScope, claim: &Claim, status: RunStatus, outcome: &GoalOutcome) {
    span.set("nightshift.run.status", status.as_str());
    span.set("nightshift.run.attempts", claim.attempt);
    span.set("gen_ai.usage.input_tokens", outcome.prompt_tokens);
    span.set("gen_ai.usage.output_tokens", outcome.completion_tokens);
    if !status.is_success() && status != RunStatus::Waiting {
        let reason = outcome
            .error
            .as_ref()
            .map_or_else(|| status.as_str().to_string(), ToString::to_string);
        span.fail(status.as_str(), reason);
    }
    span.end();
}
