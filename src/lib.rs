//! nightshift: a long-running worker that gives an AI agent a durable memory and a sense of
//! time. The binary (`src/main.rs`) is a thin CLI over this library.
//!
//! Where things live:
//! - [`config`]: the typed configuration file and its validation.
//! - [`db`]: opening the database, the connection pool, migrations, the clock.
//! - [`embed`]: the `Embedder` trait and its backends.
//! - [`memory`]: sessions, events, notes, the derived index and hybrid search.
//! - [`worker`]: the long-running daemon behind `nightshift run`.

pub mod app;
pub mod config;
pub mod consolidate;
pub mod db;
pub mod embed;
pub mod eval;
pub mod http;
pub mod ids;
pub mod memory;
pub mod notify;
pub mod runtime;
pub mod schedule;
pub mod text;
pub mod worker;
