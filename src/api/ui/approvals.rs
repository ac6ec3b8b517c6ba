//! Approvals in the dashboard (the operator answers any user's) and the pages the
//! approve and deny links open, which need no login: the link is its own proof (see
//! [`crate::approval::LinkKey`]). Opening a link only shows what it would do; the answer
//! is the button on that page (a POST), so a chat app previewing the link answers nothing.

use super::extract::UiForm;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use maud::{html, Markup};

use super::session::{same_origin, UiSession};
use super::views::{layout, urlencode, Page, Script};
use super::{checked, failure, see_other, CsrfForm};
use crate::access::Actor;
use crate::api::ApiState;
use crate::approval::{
    Approval, ApprovalError, ApprovalState, Decision, Door, LinkClaims, MAX_LIST,
};
use crate::input::visible;

/// Answered approvals on the dashboard's page (the most recently answered); pending ones
/// are all shown, up to the most one list returns.
const ANSWERED_SHOWN: i64 = 100;

pub async fn list(State(state): State<ApiState>, session: UiSession) -> Response {
    let store = state.app.approvals();
    let pending = store
        .list(&Actor::Operator, Some(ApprovalState::Pending), MAX_LIST)
        .await;
    let answered = store.answered(&Actor::Operator, ANSWERED_SHOWN).await;
    match (pending, answered) {
        (Ok(pending), Ok(answered)) => page(&pending, &answered, &session.csrf).into_response(),
        (Err(err), _) | (_, Err(err)) => failure(err),
    }
}

pub async fn answer(
    State(state): State<ApiState>,
    session: UiSession,
    headers: HeaderMap,
    Path((approval_id, action)): Path<(String, String)>,
    UiForm(form): UiForm<CsrfForm>,
) -> Response {
    if let Err(refused) = checked(&state, &session, &headers, &form.csrf) {
        return refused.into_response();
    }
    let decision = match action.as_str() {
        "approve" => Decision::Approve,
        "deny" => Decision::Deny,
        _ => {
            return (
                StatusCode::NOT_FOUND,
                super::views::error("No such action."),
            )
                .into_response()
        }
    };
    let reason = form.note.as_deref().filter(|n| !n.trim().is_empty());
    match state
        .app
        .approvals()
        .decide(
            &Actor::Operator,
            &approval_id,
            decision,
            Door::Dashboard,
            reason,
        )
        .await
    {
        Ok(_) => see_other("/ui/approvals"),
        Err(err) => failure(err),
    }
}

pub async fn open_link(State(state): State<ApiState>, Path(token): Path<String>) -> Response {
    match state.app.approvals().open_link(&token).await {
        Ok((approval, claims)) => link_page(&approval, &claims, &token).into_response(),
        Err(err) => link_failure(err),
    }
}

pub async fn follow_link(
    State(state): State<ApiState>,
    headers: HeaderMap,
    Path(token): Path<String>,
) -> Response {
    if let Err(refused) = same_origin(&headers, super::public_url(&state)) {
        return refused.into_response();
    }
    match state.app.approvals().follow_link(&token).await {
        Ok(approval) => answered_page(&approval).into_response(),
        Err(err) => link_failure(err),
    }
}

/// A link's failure as a page: a bad or expired link says only that; an answered
/// approval says what was decided (the link's holder was sent it).
fn link_failure(err: ApprovalError) -> Response {
    match &err {
        ApprovalError::Decided { state, by, .. } => (
            StatusCode::CONFLICT,
            layout(
                "Already answered",
                None,
                Script::None,
                html! { p role="status" { "This request was already answered: " strong { (state) } " (" (by) ")." } },
            ),
        )
            .into_response(),
        ApprovalError::Link(reason) => (
            StatusCode::NOT_FOUND,
            layout("Link not valid", None, Script::None, html! { p.error role="alert" { (reason.to_string()) } }),
        )
            .into_response(),
        // The link verified, so its approval existed; gone with its schedule since.
        ApprovalError::NotFound(_) => (
            StatusCode::NOT_FOUND,
            layout("Link not valid", None, Script::None, html! { p.error role="alert" { "This request no longer exists." } }),
        )
            .into_response(),
        _ => failure(err),
    }
}

fn call(approval: &Approval) -> Markup {
    html! {
        dl {
            dt { "User" } dd { (visible(&approval.user_id)) }
            dt { "Schedule" } dd { code { (visible(&approval.schedule_id)) } }
            dt { "Tool" } dd { code { (visible(&approval.tool_name)) } }
            dt { "Arguments" } dd { pre { (visible(&approval.arguments)) } }
            dt { "Asked" } dd { (approval.created_at) }
            dt { "Counts as denied if unanswered by" } dd { (approval.expires_at) }
        }
    }
}

fn link_page(approval: &Approval, claims: &LinkClaims, token: &str) -> Page {
    let (title, label) = match claims.action.decision() {
        Decision::Approve => ("Approve this call?", "Approve"),
        Decision::Deny => ("Deny this call?", "Deny"),
    };
    let action = format!("/approval-link/{}", urlencode(token));
    layout(
        title,
        None,
        Script::None,
        html! {
            (call(approval))
            @if approval.state == ApprovalState::Pending {
                form method="post" action=(action) {
                    button type="submit" { (label) }
                }
            } @else {
                p role="status" { "Already answered: " strong { (approval.state) } " (" (approval.decided_by.as_deref().unwrap_or_default()) ")." }
            }
        },
    )
}

fn answered_page(approval: &Approval) -> Page {
    layout(
        "Answered",
        None,
        Script::None,
        html! {
            p role="status" { "The call to " code { (visible(&approval.tool_name)) } " was " strong { (approval.state) } ". The run goes on." }
        },
    )
}

fn page(pending: &[Approval], answered: &[Approval], csrf: &str) -> Page {
    layout(
        "Approvals",
        Some(csrf),
        Script::None,
        html! {
            h2 { "Waiting (" (pending.len()) ")" }
            @if pending.len() as i64 >= MAX_LIST {
                p.error role="alert" { "Only the newest " (MAX_LIST) " are shown: answer some, or use " code { "nightshift approvals list --state pending" } "." }
            }
            @if pending.is_empty() {
                p { "No tool call is waiting for an answer." }
            } @else {
                table {
                    thead { tr { th { "Asked" } th { "User" } th { "Schedule" } th { "Tool" } th { "Arguments" } th { "Answer" } } }
                    tbody {
                        @for a in pending {
                            @let base = format!("/ui/approvals/{}", urlencode(&a.approval_id));
                            tr {
                                td { (a.created_at) }
                                td { (visible(&a.user_id)) }
                                td { a href=(format!("/ui/schedules/{}", urlencode(&a.schedule_id))) { (visible(&a.schedule_id)) } }
                                td { code { (visible(&a.tool_name)) } }
                                td { pre { (visible(crate::text::truncate_chars(&a.arguments, 500))) } }
                                td {
                                    form method="post" action=(format!("{base}/approve")) class="inline" {
                                        input type="hidden" name="csrf" value=(csrf);
                                        button type="submit" { "Approve" }
                                    }
                                    form method="post" action=(format!("{base}/deny")) class="inline" {
                                        input type="hidden" name="csrf" value=(csrf);
                                        input type="text" name="note" placeholder="reason (optional)" maxlength="2000";
                                        button type="submit" { "Deny" }
                                    }
                                }
                            }
                        }
                    }
                }
            }
            h2 { "Answered (the latest " (ANSWERED_SHOWN) ")" }
            @if answered.is_empty() {
                p { "None yet." }
            } @else {
                table {
                    thead { tr { th { "Asked" } th { "User" } th { "Tool" } th { "Answer" } th { "By" } th { "Reason" } } }
                    tbody {
                        @for a in answered {
                            tr {
                                td { (a.created_at) }
                                td { (visible(&a.user_id)) }
                                td { code { (visible(&a.tool_name)) } }
                                td { (a.state) }
                                td { (a.decided_by.as_deref().unwrap_or_default()) }
                                td { (visible(a.reason.as_deref().unwrap_or_default())) }
                            }
                        }
                    }
                }
            }
        },
    )
}
