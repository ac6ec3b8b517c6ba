//! `/v1/schedules` and `/v1/runs`: a user's schedules and their runs.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::api::auth::Caller;
use crate::api::error::{ApiError, Failures};
use crate::api::extract::{ApiJson, ApiPath, ApiQuery};
use crate::api::types::{
    BackfillBody, PauseBody, ReplayBody, RerunQuery, RunListQuery, RunsQuery, ScheduleListQuery,
    TriggerBody, UserQuery,
};
use crate::api::ApiState;
use crate::input::InputError;
use crate::schedule::store::{
    Backfill, Replay, ReplayAsk, Rerun, RerunMemory, RunFilter, ScheduleFilter, Triggered,
};
use crate::schedule::view::{
    RunView, ScheduleDeleted, ScheduleList, ScheduleView, LIST_NEXT_RUNS, SHOW_NEXT_RUNS,
};
use crate::spec::{SchedulePatch, ScheduleSpec};

pub fn router() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new()
        .routes(routes!(add_schedule, list_schedules))
        .routes(routes!(show_schedule, edit_schedule, delete_schedule))
        .routes(routes!(pause))
        .routes(routes!(resume))
        .routes(routes!(run_now))
        .routes(routes!(trigger))
        .routes(routes!(backfill))
        .routes(routes!(runs))
        .routes(routes!(list_runs))
        .routes(routes!(show_run))
        .routes(routes!(cancel_run))
        .routes(routes!(rerun))
        .routes(routes!(replay))
}

/// Run a past run's occurrence again with the input it had, as a new run whose
/// `parent_run_id` names it. 409 for a run still going (or a schedule paused or ended);
/// 400 for a skipped run, which never ran (backfill it instead).
#[utoipa::path(post, path = "/v1/runs/{run_id}/rerun", tag = "schedules",
    params(("run_id" = String, Path), RerunQuery),
    responses((status = 202, body = Rerun), Failures),
    security(("bearer" = [])))]
async fn rerun(
    State(state): State<ApiState>,
    caller: Caller,
    ApiPath(run_id): ApiPath<String>,
    ApiQuery(query): ApiQuery<RerunQuery>,
) -> Result<(StatusCode, Json<Rerun>), ApiError> {
    let actor = caller.actor_for(query.user.as_deref())?;
    let memory = RerunMemory::as_of_original(query.memory_as_of_original);
    let rerun = state.app.schedules().rerun(&actor, &run_id, memory).await?;
    Ok((StatusCode::ACCEPTED, Json(rerun)))
}

/// Rerun every run of a past range that ran and ended (only those that ended as `status`,
/// when given), oldest first, at most 1000; a run already rerun is not queued again. 202
/// when queued, 200 for a dry run.
#[utoipa::path(post, path = "/v1/schedules/{schedule_id}/replay", tag = "schedules",
    params(("schedule_id" = String, Path), UserQuery),
    request_body = ReplayBody,
    responses((status = 202, body = Replay), (status = 200, body = Replay), Failures),
    security(("bearer" = [])))]
async fn replay(
    State(state): State<ApiState>,
    caller: Caller,
    ApiPath(schedule_id): ApiPath<String>,
    ApiQuery(query): ApiQuery<UserQuery>,
    ApiJson(body): ApiJson<ReplayBody>,
) -> Result<(StatusCode, Json<Replay>), ApiError> {
    let actor = caller.actor_for(query.user.as_deref())?;
    let replay = state
        .app
        .schedules()
        .replay(
            &actor,
            &schedule_id,
            &ReplayAsk {
                from: &body.from,
                to: &body.to,
                status: body.status.as_deref(),
                dry_run: body.dry_run,
                memory: RerunMemory::as_of_original(body.memory_as_of_original),
            },
        )
        .await?;
    let status = if replay.dry_run {
        StatusCode::OK
    } else {
        StatusCode::ACCEPTED
    };
    Ok((status, Json(replay)))
}

/// Stop a run: one waiting for an approval is `cancelled` at once; a running one comes
/// back `running` with `cancel_requested_by` set, and its worker stops the runtime call
/// and records it `cancelled`. 409 for a run that already ended.
#[utoipa::path(post, path = "/v1/runs/{run_id}/cancel", tag = "schedules",
    params(("run_id" = String, Path), UserQuery),
    responses((status = 200, body = RunView), Failures),
    security(("bearer" = [])))]
async fn cancel_run(
    State(state): State<ApiState>,
    caller: Caller,
    ApiPath(run_id): ApiPath<String>,
    ApiQuery(query): ApiQuery<UserQuery>,
) -> Result<Json<RunView>, ApiError> {
    let actor = caller.actor_for(query.user.as_deref())?;
    let run = state
        .app
        .schedules()
        .cancel_run(&actor, &run_id, "api")
        .await?;
    Ok(Json(RunView::from(&run)))
}

/// Add a schedule: a goal and exactly one of `cron` (+ `tz`), `every`, `at`, `when`. With a
/// user token it is the token's user's, and notifies only through channels granted to them.
#[utoipa::path(post, path = "/v1/schedules", tag = "schedules", params(UserQuery),
    request_body = ScheduleSpec,
    responses((status = 201, body = ScheduleView), Failures),
    security(("bearer" = [])))]
async fn add_schedule(
    State(state): State<ApiState>,
    caller: Caller,
    ApiQuery(query): ApiQuery<UserQuery>,
    ApiJson(spec): ApiJson<ScheduleSpec>,
) -> Result<(StatusCode, Json<ScheduleView>), ApiError> {
    // The user comes from the token (or an admin's ?user=), never from the body.
    let user = caller.user_for(query.user.as_deref().or(match &caller.actor {
        crate::access::Actor::Operator => spec.user.as_deref(),
        crate::access::Actor::User(_) => None,
    }))?;
    if spec.user.as_deref().is_some_and(|u| u != user) {
        return Err(ApiError::from(InputError::new(
            "user",
            "the body's user differs from the token's; leave it out",
        )));
    }
    let actor = caller.actor.clone();
    let schedule = state.app.add_schedule(&actor, &user, &spec).await?;
    Ok((
        StatusCode::CREATED,
        Json(ScheduleView::new(&schedule, SHOW_NEXT_RUNS)),
    ))
}

/// Schedules, newest first, a page at a time.
#[utoipa::path(get, path = "/v1/schedules", tag = "schedules", params(ScheduleListQuery),
    responses((status = 200, body = ScheduleList), Failures),
    security(("bearer" = [])))]
async fn list_schedules(
    State(state): State<ApiState>,
    caller: Caller,
    ApiQuery(query): ApiQuery<ScheduleListQuery>,
) -> Result<Json<ScheduleList>, ApiError> {
    let actor = caller.actor_for(query.user.as_deref())?;
    let status = query
        .status
        .as_deref()
        .map(|s| {
            s.parse()
                .map_err(|reason| InputError::new("status", reason))
        })
        .transpose()?;
    let filter = ScheduleFilter {
        user_id: actor.user_id().map(str::to_string),
        status,
        made_by_agent: query.made_by_agent.unwrap_or(false),
        limit: Some(query.limit.unwrap_or(100)),
        offset: query.offset.unwrap_or(0),
    };
    let (schedules, total) = state.app.schedules().list(&actor, &filter).await?;
    Ok(Json(ScheduleList {
        schedules: schedules
            .iter()
            .map(|s| ScheduleView::new(s, LIST_NEXT_RUNS))
            .collect(),
        total,
    }))
}

/// One schedule, with its next five runs.
#[utoipa::path(get, path = "/v1/schedules/{schedule_id}", tag = "schedules",
    params(("schedule_id" = String, Path), UserQuery),
    responses((status = 200, body = ScheduleView), Failures),
    security(("bearer" = [])))]
async fn show_schedule(
    State(state): State<ApiState>,
    caller: Caller,
    ApiPath(schedule_id): ApiPath<String>,
    ApiQuery(query): ApiQuery<UserQuery>,
) -> Result<Json<ScheduleView>, ApiError> {
    let actor = caller.actor_for(query.user.as_deref())?;
    let schedule = state.app.schedules().get(&actor, &schedule_id).await?;
    Ok(Json(ScheduleView::new(&schedule, SHOW_NEXT_RUNS)))
}

/// Change a schedule in place, keeping its id and runs: the fields given replace its
/// settings, `clear` takes optional ones away; a new cadence (or `tz` alone) works out its
/// next runs again. A run in progress goes on as it started.
#[utoipa::path(patch, path = "/v1/schedules/{schedule_id}", tag = "schedules",
    params(("schedule_id" = String, Path), UserQuery),
    request_body = SchedulePatch,
    responses((status = 200, body = ScheduleView), Failures),
    security(("bearer" = [])))]
async fn edit_schedule(
    State(state): State<ApiState>,
    caller: Caller,
    ApiPath(schedule_id): ApiPath<String>,
    ApiQuery(query): ApiQuery<UserQuery>,
    ApiJson(patch): ApiJson<SchedulePatch>,
) -> Result<Json<ScheduleView>, ApiError> {
    let actor = caller.actor_for(query.user.as_deref())?;
    let schedule = state
        .app
        .edit_schedule(&actor, &schedule_id, &patch)
        .await?;
    Ok(Json(ScheduleView::new(&schedule, SHOW_NEXT_RUNS)))
}

/// Stop running a schedule until resumed, with an optional note.
#[utoipa::path(post, path = "/v1/schedules/{schedule_id}/pause", tag = "schedules",
    params(("schedule_id" = String, Path), UserQuery),
    request_body(content = PauseBody, description = "Optional"),
    responses((status = 200, body = ScheduleView), Failures),
    security(("bearer" = [])))]
async fn pause(
    State(state): State<ApiState>,
    caller: Caller,
    ApiPath(schedule_id): ApiPath<String>,
    ApiQuery(query): ApiQuery<UserQuery>,
    body: Option<ApiJson<PauseBody>>,
) -> Result<Json<ScheduleView>, ApiError> {
    let actor = caller.actor_for(query.user.as_deref())?;
    let note = body.and_then(|ApiJson(b)| b.note);
    let schedule = state
        .app
        .schedules()
        .pause(&actor, &schedule_id, note.as_deref())
        .await?;
    Ok(Json(ScheduleView::new(&schedule, 0)))
}

/// Resume a paused schedule from now (a one-shot whose time passed runs now).
#[utoipa::path(post, path = "/v1/schedules/{schedule_id}/resume", tag = "schedules",
    params(("schedule_id" = String, Path), UserQuery),
    responses((status = 200, body = ScheduleView), Failures),
    security(("bearer" = [])))]
async fn resume(
    State(state): State<ApiState>,
    caller: Caller,
    ApiPath(schedule_id): ApiPath<String>,
    ApiQuery(query): ApiQuery<UserQuery>,
) -> Result<Json<ScheduleView>, ApiError> {
    let actor = caller.actor_for(query.user.as_deref())?;
    let schedule = state.app.schedules().resume(&actor, &schedule_id).await?;
    Ok(Json(ScheduleView::new(&schedule, LIST_NEXT_RUNS)))
}

/// Make a schedule due now; its cadence continues afterwards.
#[utoipa::path(post, path = "/v1/schedules/{schedule_id}/run-now", tag = "schedules",
    params(("schedule_id" = String, Path), UserQuery),
    responses((status = 200, body = ScheduleView), Failures),
    security(("bearer" = [])))]
async fn run_now(
    State(state): State<ApiState>,
    caller: Caller,
    ApiPath(schedule_id): ApiPath<String>,
    ApiQuery(query): ApiQuery<UserQuery>,
) -> Result<Json<ScheduleView>, ApiError> {
    let actor = caller.actor_for(query.user.as_deref())?;
    let schedule = state.app.schedules().run_now(&actor, &schedule_id).await?;
    Ok(Json(ScheduleView::new(&schedule, LIST_NEXT_RUNS)))
}

/// Start a run now with an input the runtime receives beside the goal (a webhook's
/// payload). 202 when a run was queued; 200 with `deduplicated` when the idempotency key
/// was used before (no new run). Runs of one schedule's triggers go one after another
/// unless its overlap is `allow`.
#[utoipa::path(post, path = "/v1/schedules/{schedule_id}/trigger", tag = "schedules",
    params(("schedule_id" = String, Path), UserQuery),
    request_body = TriggerBody,
    responses((status = 202, body = Triggered), (status = 200, body = Triggered), Failures),
    security(("bearer" = [])))]
async fn trigger(
    State(state): State<ApiState>,
    caller: Caller,
    ApiPath(schedule_id): ApiPath<String>,
    ApiQuery(query): ApiQuery<UserQuery>,
    ApiJson(body): ApiJson<TriggerBody>,
) -> Result<(StatusCode, Json<Triggered>), ApiError> {
    let actor = caller.actor_for(query.user.as_deref())?;
    let triggered = state
        .app
        .schedules()
        .trigger(
            &actor,
            &schedule_id,
            body.input.as_deref(),
            body.idempotency_key.as_deref(),
        )
        .await?;
    let status = if triggered.deduplicated {
        StatusCode::OK
    } else {
        StatusCode::ACCEPTED
    };
    Ok((status, Json(triggered)))
}

/// Run the occurrences of a past range, oldest first (at most 1000); those that already
/// have a run are not run again. 202 when queued, 200 for a dry run.
#[utoipa::path(post, path = "/v1/schedules/{schedule_id}/backfill", tag = "schedules",
    params(("schedule_id" = String, Path), UserQuery),
    request_body = BackfillBody,
    responses((status = 202, body = Backfill), (status = 200, body = Backfill), Failures),
    security(("bearer" = [])))]
async fn backfill(
    State(state): State<ApiState>,
    caller: Caller,
    ApiPath(schedule_id): ApiPath<String>,
    ApiQuery(query): ApiQuery<UserQuery>,
    ApiJson(body): ApiJson<BackfillBody>,
) -> Result<(StatusCode, Json<Backfill>), ApiError> {
    let actor = caller.actor_for(query.user.as_deref())?;
    let backfill = state
        .app
        .schedules()
        .backfill(&actor, &schedule_id, &body.from, &body.to, body.dry_run)
        .await?;
    let status = if backfill.dry_run {
        StatusCode::OK
    } else {
        StatusCode::ACCEPTED
    };
    Ok((status, Json(backfill)))
}

/// Delete a schedule and its run history.
#[utoipa::path(delete, path = "/v1/schedules/{schedule_id}", tag = "schedules",
    params(("schedule_id" = String, Path), UserQuery),
    responses((status = 200, body = ScheduleDeleted), Failures),
    security(("bearer" = [])))]
async fn delete_schedule(
    State(state): State<ApiState>,
    caller: Caller,
    ApiPath(schedule_id): ApiPath<String>,
    ApiQuery(query): ApiQuery<UserQuery>,
) -> Result<Json<ScheduleDeleted>, ApiError> {
    let actor = caller.actor_for(query.user.as_deref())?;
    state.app.schedules().delete(&actor, &schedule_id).await?;
    Ok(Json(ScheduleDeleted {
        schedule_id,
        deleted: true,
    }))
}

/// A schedule's runs, newest first.
#[utoipa::path(get, path = "/v1/schedules/{schedule_id}/runs", tag = "schedules",
    params(("schedule_id" = String, Path), RunsQuery),
    responses((status = 200, body = Vec<RunView>), Failures),
    security(("bearer" = [])))]
async fn runs(
    State(state): State<ApiState>,
    caller: Caller,
    ApiPath(schedule_id): ApiPath<String>,
    ApiQuery(query): ApiQuery<RunsQuery>,
) -> Result<Json<Vec<RunView>>, ApiError> {
    let actor = caller.actor_for(query.user.as_deref())?;
    let runs = state
        .app
        .schedules()
        .runs(&actor, &schedule_id, query.limit.unwrap_or(20))
        .await?;
    Ok(Json(runs.iter().map(RunView::from).collect()))
}

/// Runs across the caller's schedules (an admin's: every user's, or `?user=`'s), newest
/// occurrence first, filtered by status, schedule and a range of occurrence times; a page
/// at a time, with how many match in all.
#[utoipa::path(get, path = "/v1/runs", tag = "schedules",
    params(RunListQuery),
    responses((status = 200, body = RunList), Failures),
    security(("bearer" = [])))]
async fn list_runs(
    State(state): State<ApiState>,
    caller: Caller,
    ApiQuery(query): ApiQuery<RunListQuery>,
) -> Result<Json<RunList>, ApiError> {
    let actor = caller.actor_for(query.user.as_deref())?;
    let mut filter = RunFilter::parse(
        query.status.as_deref(),
        None,
        query.schedule.as_deref(),
        query.since.as_deref(),
        query.until.as_deref(),
    )?;
    filter.limit = query.limit.unwrap_or(filter.limit);
    filter.offset = query.offset.unwrap_or(0);
    let (runs, total) = state.app.schedules().list_runs(&actor, &filter).await?;
    Ok(Json(RunList {
        runs: runs.iter().map(RunView::from).collect(),
        total,
    }))
}

/// A page of runs, and how many the filters match in all.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct RunList {
    pub runs: Vec<RunView>,
    pub total: i64,
}

/// One run, with its output and error.
#[utoipa::path(get, path = "/v1/runs/{run_id}", tag = "schedules",
    params(("run_id" = String, Path), UserQuery),
    responses((status = 200, body = RunView), Failures),
    security(("bearer" = [])))]
async fn show_run(
    State(state): State<ApiState>,
    caller: Caller,
    ApiPath(run_id): ApiPath<String>,
    ApiQuery(query): ApiQuery<UserQuery>,
) -> Result<Json<RunView>, ApiError> {
    let actor = caller.actor_for(query.user.as_deref())?;
    let run = state.app.schedules().run(&actor, &run_id).await?;
    Ok(Json(RunView::from(&run)))
}
