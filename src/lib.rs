//! nightshift: a long-running worker that gives an AI agent a durable memory and a sense of
//! time. The binary (`src/main.rs`) is a thin CLI over this library.
//!
//! Where things live, from the front doors down (dependencies point down, never up):
//! - [`app`]: the composition root — opens the database and builds every component once;
//!   `app::check` is what `config check` checks.
//! - [`api`]: the HTTP API (REST under `/v1`, OpenAPI, health, metrics) — a front door.
//! - [`daemon`]: `nightshift run` — the worker and the API server under one shutdown.
//! - [`worker`]: the long-running worker: scheduler loop, runs, outbox sender, upkeep.
//! - [`consolidate`]: rolling summaries and the overnight passes.
//! - [`schedule`]: cadences, the schedule store, claims and run records, config sync.
//! - [`runtime`]: the agent runtimes a due run is sent to.
//! - [`notify`]: channels, the durable outbox and its sender.
//! - [`state`]: scoped key-value state (session, `user:`, `app:`, `temp:`).
//! - [`memory`]: sessions, events, notes, the derived index and hybrid search.
//! - [`portable`]: export and import (nightshift archives, mem0, Markdown folders).
//! - [`artifact`]: files agents produced, stored with a session, content once per hash.
//! - [`embed`]: the `Embedder` trait and its backends.
//! - [`eval`]: retrieval-quality measurement on LoCoMo.
//! - [`db`]: opening the database, connections, write transactions, migrations, the clock.
//! - [`config`]: the typed configuration file and its validation.
//! - [`spec`]: what callers ask for (a schedule's spec) and its closed vocabularies.
//! - [`access`]: who acts — a user or the operator — checked by every operation.
//! - [`input`]: the rules every input passes (text, ids, numbers, instants, sizes).
//! - [`error`]: error kinds, mapped once per front door (exit codes, HTTP statuses).
//! - [`tokens`]: API tokens — created, listed, revoked, checked — and the dashboard's
//!   sessions started from an admin token.
//! - [`telemetry`]: metrics recorded by every module, rendered by `/metrics`.
//! - [`health`]: the scheduler loop's heartbeat, for readiness.
//! - [`text`], [`http`], [`ids`]: small shared helpers.

#[macro_use]
mod text_enum;

pub mod access;
pub mod api;
pub mod app;
pub mod approval;
pub mod artifact;
pub mod config;
pub mod consolidate;
pub mod daemon;
pub mod db;
pub mod embed;
pub mod error;
pub mod eval;
pub mod fact_category;
pub mod health;
pub(crate) mod http;
pub mod ids;
pub mod input;
pub mod mcp;
pub mod mcp_client;
pub mod memory;
pub mod notify;
pub mod portable;
pub mod quiet_hours;
pub mod registry;
pub mod runtime;
pub mod schedule;
pub mod smtp_url;
pub mod sources;
pub mod spec;
pub mod state;
pub mod strict_json;
pub mod telemetry;
pub mod text;
pub mod time_of_day;
pub mod time_words;
pub mod tokens;
pub mod traces;
pub mod usage;
pub mod worker;

pub use error::Error;
