//! `ServerStream`: what this process keeps of a server connection's stream.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a server stream may sit idle and still carry the next statement: well inside
/// the 10 s after which sqld ends an idle stream (measured on 0.24: a statement 9 s after
/// the last one ran, one 12 s after failed with `STREAM_EXPIRED`). Idle longer, the
/// connection starts its next statement on a new stream.
const STREAM_REUSE: Duration = Duration::from_secs(2);

/// What this process keeps of a server connection's stream, with the connection in the
/// pool: the statements described on it and when it last carried a request.
#[derive(Clone)]
pub(super) struct ServerStream(Arc<StreamState>);

struct StreamState {
    described: Mutex<HashMap<String, Arc<libsql::Statement>>>,
    last_request: Mutex<Instant>,
}

impl ServerStream {
    /// A new connection's: its stream is opened by its first request.
    pub(super) fn new() -> Self {
        Self(Arc::new(StreamState {
            described: Mutex::new(HashMap::new()),
            last_request: Mutex::new(Instant::now()),
        }))
    }

    pub(super) fn described(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<String, Arc<libsql::Statement>>> {
        self.0.described.lock().expect("statement cache poisoned")
    }

    /// Marks a request as made now, saying whether the stream had been idle too long to
    /// carry it.
    pub(super) fn touch(&self) -> bool {
        let mut last = self.0.last_request.lock().expect("stream clock poisoned");
        let stale = last.elapsed() > STREAM_REUSE;
        *last = Instant::now();
        stale
    }
}
