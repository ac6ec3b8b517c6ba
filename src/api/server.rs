//! The listening socket: plain HTTP or HTTPS (rustls), HTTP/1 and HTTP/2, a client that does
//! not send its headers in time dropped (one that sends nothing too), at most
//! `server.max_connections` open, and a graceful stop — no new connections, the requests
//! in flight finished within the grace period.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use hyper_util::server::graceful::{GracefulShutdown, Watcher};
use hyper_util::service::TowerToHyperService;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tower::ServiceBuilder;

use crate::config::ServerConfig;

#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("cannot listen on {addr}: {reason}")]
    Bind { addr: String, reason: String },
    #[error("invalid config value `{key}`: {reason}")]
    Tls { key: &'static str, reason: String },
}

impl crate::error::Kind for ServerError {
    fn kind(&self) -> crate::error::ErrorKind {
        match self {
            // A port taken by a process still exiting is worth a restart.
            ServerError::Bind { .. } => crate::error::ErrorKind::Unavailable,
            ServerError::Tls { .. } => crate::error::ErrorKind::Config,
        }
    }
}

/// A bound server, not yet serving.
pub struct Listening {
    listener: TcpListener,
    router: axum::Router,
    tls: Option<tokio_rustls::TlsAcceptor>,
    header_timeout: Duration,
    /// Connections open at once: `server.max_connections`, lowered to fit the open-file
    /// limit.
    max_connections: usize,
}

/// The TLS acceptor for a certificate chain and key in PEM files.
pub fn tls_acceptor(cert: &str, key: &str) -> Result<tokio_rustls::TlsAcceptor, ServerError> {
    use rustls_pki_types::pem::PemObject;
    use rustls_pki_types::{CertificateDer, PrivateKeyDer};
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .and_then(|certs| certs.collect::<Result<_, _>>())
        .map_err(|e| ServerError::Tls {
            key: "server.tls_cert_file",
            reason: format!("cannot read certificates from {cert}: {e}"),
        })?;
    if certs.is_empty() {
        return Err(ServerError::Tls {
            key: "server.tls_cert_file",
            reason: format!("{cert} holds no certificate"),
        });
    }
    let key_der = PrivateKeyDer::from_pem_file(key).map_err(|e| ServerError::Tls {
        key: "server.tls_key_file",
        reason: format!("cannot read a private key from {key}: {e}"),
    })?;
    let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
    let mut config = tokio_rustls::rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| ServerError::Tls {
            key: "server.tls_cert_file",
            reason: e.to_string(),
        })?
        .with_no_client_auth()
        .with_single_cert(certs, key_der)
        .map_err(|e| ServerError::Tls {
            key: "server.tls_key_file",
            reason: format!("the key does not suit the certificate: {e}"),
        })?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(tokio_rustls::TlsAcceptor::from(Arc::new(config)))
}

impl Listening {
    /// Binds `config.listen` for `router`.
    pub async fn bind(config: &ServerConfig, router: axum::Router) -> Result<Self, ServerError> {
        let tls = match (&config.tls_cert_file, &config.tls_key_file) {
            (Some(cert), Some(key)) => Some(tls_acceptor(cert, key)?),
            _ => None,
        };
        let listener = TcpListener::bind(&config.listen)
            .await
            .map_err(|e| ServerError::Bind {
                addr: config.listen.clone(),
                reason: e.to_string(),
            })?;
        Ok(Self {
            listener,
            router,
            tls,
            header_timeout: Duration::from_secs(config.header_read_timeout_secs),
            max_connections: connection_cap(config.max_connections, open_file_limit()),
        })
    }

    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.listener.local_addr().ok()
    }

    pub fn is_tls(&self) -> bool {
        self.tls.is_some()
    }

    /// Serves until `stop`, then lets the requests in flight finish within `grace`.
    /// Past `max_connections` open, a new connection is closed as it is accepted: the
    /// process keeps file descriptors for its database and peers, and the clients beyond
    /// the cap learn it at once instead of waiting in the kernel's queue.
    pub async fn serve(self, stop: CancellationToken, grace: Duration) {
        let Listening {
            listener,
            router,
            tls,
            header_timeout,
            max_connections,
        } = self;
        let graceful = GracefulShutdown::new();
        let connections = Connections {
            builder: http_builder(header_timeout),
            router,
            tls,
            first_request_within: header_timeout,
        };
        let open = Arc::new(Semaphore::new(max_connections));
        let mut accept_failed = Throttle::new(LOG_EVERY);
        let mut refused = Throttle::new(LOG_EVERY);
        loop {
            let stream = tokio::select! {
                _ = stop.cancelled() => break,
                accepted = listener.accept() => match accepted {
                    Ok((stream, _peer)) => stream,
                    Err(err) => {
                        // Out of file descriptors, say: wait a moment rather than spin (the
                        // connection stays queued), and say so without a line per attempt.
                        if let Some(times) = accept_failed.tick() {
                            tracing::warn!(%err, times, "cannot accept a connection");
                        }
                        tokio::time::sleep(ACCEPT_BACKOFF).await;
                        continue;
                    }
                },
            };
            // Answers go out as they are written: an event stream's small writes would
            // otherwise wait for the client's delayed acknowledgement (up to 40 ms each).
            if let Err(err) = stream.set_nodelay(true) {
                tracing::debug!(%err, "cannot set TCP_NODELAY on a connection");
            }
            let Ok(permit) = open.clone().try_acquire_owned() else {
                if let Some(times) = refused.tick() {
                    tracing::warn!(
                        max_connections,
                        times,
                        "connection closed: server.max_connections are open"
                    );
                }
                drop(stream);
                continue;
            };
            tokio::spawn(
                connections
                    .clone()
                    .serve(stream, permit, graceful.watcher()),
            );
        }
        // No new connections from here (the listener is dropped); those open finish the
        // request they are on, within the grace period.
        drop(listener);
        if tokio::time::timeout(grace, graceful.shutdown())
            .await
            .is_err()
        {
            tracing::warn!(
                grace_secs = grace.as_secs(),
                "requests still going after the grace period; closing their connections"
            );
        }
    }
}

/// How long the accept loop waits after a failed accept before it tries again.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// A warning repeated for every connection would flood the log in the very flood it
/// reports: at most one every this long, with the count since the last.
const LOG_EVERY: Duration = Duration::from_secs(10);

/// File descriptors kept for everything but the API's connections: the database's
/// (`database.pool_size` connections of up to 3 files each), the runtime's, channels' and
/// libSQL server's sockets, artifacts and imports being read, the log.
const RESERVED_FILES: u64 = 1024;

/// `configured` connections, or fewer when the open-file limit `files` leaves no room
/// for them beside the files the rest of the process needs (half the limit at most is
/// set aside, so a small limit still serves).
fn connection_cap(configured: usize, files: Option<u64>) -> usize {
    let Some(files) = files else {
        return configured;
    };
    let room = room_for(files);
    if room < configured {
        tracing::warn!(
            max_connections = configured,
            open_file_limit = files,
            serving = room,
            "server.max_connections does not fit the open-file limit (LimitNOFILE); \
             serving fewer connections"
        );
    }
    configured.min(room)
}

/// Connections that fit beside the files the rest of the process needs, under a limit of
/// `files`.
fn room_for(files: u64) -> usize {
    let room = files.saturating_sub(RESERVED_FILES.min(files / 2)).max(1);
    usize::try_from(room).unwrap_or(usize::MAX)
}

/// The connections the server holds open at most with `server.max_connections` set to
/// `configured`: fewer where the open-file limit leaves no room for them.
pub fn served_connections(configured: usize) -> usize {
    open_file_limit().map_or(configured, |files| configured.min(room_for(files)))
}

/// The process's soft limit on open files, where the system says it (Linux); `None`
/// when it is unlimited or unknown.
fn open_file_limit() -> Option<u64> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line.split_whitespace().nth(3)?.parse().ok()
}

/// HTTP/1 and HTTP/2, each with its timer; HTTP/1 drops a client whose headers take longer
/// than `header_timeout` on every request of a connection.
fn http_builder(header_timeout: Duration) -> Builder<TokioExecutor> {
    let mut builder = Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(header_timeout);
    builder.http2().timer(TokioTimer::new());
    builder
}

/// What serving one connection takes.
#[derive(Clone)]
struct Connections {
    builder: Builder<TokioExecutor>,
    router: axum::Router,
    tls: Option<tokio_rustls::TlsAcceptor>,
    /// From its accept, the time a connection has to finish its TLS handshake and send
    /// its first request's headers.
    first_request_within: Duration,
}

impl Connections {
    /// Serves `stream` until it closes; `permit` counts it as open until then.
    async fn serve(self, stream: TcpStream, permit: OwnedSemaphorePermit, watcher: Watcher) {
        let _open = permit;
        let deadline = Instant::now() + self.first_request_within;
        let first_request = Arc::new(Notify::new());
        let service = TowerToHyperService::new(
            ServiceBuilder::new()
                .map_request({
                    let first_request = first_request.clone();
                    move |request: hyper::Request<hyper::body::Incoming>| {
                        first_request.notify_one();
                        request
                    }
                })
                .service(self.router),
        );
        match self.tls {
            None => {
                let conn = self
                    .builder
                    .serve_connection_with_upgrades(TokioIo::new(stream), service);
                until_closed(watcher.watch(conn.into_owned()), &first_request, deadline).await;
            }
            Some(acceptor) => {
                let tls = match tokio::time::timeout_at(deadline, acceptor.accept(stream)).await {
                    Ok(Ok(tls)) => tls,
                    Ok(Err(err)) => {
                        tracing::debug!(%err, "TLS handshake failed");
                        return;
                    }
                    Err(_) => return,
                };
                let conn = self
                    .builder
                    .serve_connection_with_upgrades(TokioIo::new(tls), service);
                until_closed(watcher.watch(conn.into_owned()), &first_request, deadline).await;
            }
        }
    }
}

/// Drives `conn` until it ends, dropping it (which closes it) if no request has started
/// by `deadline`. hyper's own header timeout starts only once HTTP/1 is known, which the
/// server learns from the client's first bytes: a client that sends none would hold its
/// connection, and a file descriptor, for ever.
async fn until_closed(conn: impl Future, first_request: &Notify, deadline: Instant) {
    tokio::pin!(conn);
    tokio::select! {
        _ = &mut conn => return,
        _ = first_request.notified() => {}
        _ = tokio::time::sleep_until(deadline) => {
            tracing::debug!("connection closed: no request within server.header_read_timeout_secs");
            return;
        }
    }
    conn.await;
}

/// Says "now" at most once a `period`, with how many times it was asked since.
struct Throttle {
    period: Duration,
    last: Option<Instant>,
    since: u64,
}

impl Throttle {
    fn new(period: Duration) -> Self {
        Self {
            period,
            last: None,
            since: 0,
        }
    }

    fn tick(&mut self) -> Option<u64> {
        self.since += 1;
        let now = Instant::now();
        if self.last.is_some_and(|last| now - last < self.period) {
            return None;
        }
        self.last = Some(now);
        Some(std::mem::take(&mut self.since))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_connection_cap_leaves_files_for_the_rest() {
        // The unit's limit holds the default whole.
        assert_eq!(connection_cap(4096, Some(16384)), 4096);
        assert_eq!(connection_cap(4096, None), 4096);
        // 1,024 kept back...
        assert_eq!(connection_cap(4096, Some(4096)), 3072);
        // ...or half a small limit, as a shell's 1,024 is.
        assert_eq!(connection_cap(4096, Some(1024)), 512);
        assert_eq!(connection_cap(10, Some(1024)), 10);
        // Never none at all.
        assert_eq!(connection_cap(4096, Some(1)), 1);
        assert_eq!(connection_cap(4096, Some(0)), 1);
    }

    #[test]
    fn the_open_file_limit_is_read_where_the_system_says_it() {
        if std::path::Path::new("/proc/self/limits").exists() {
            assert!(open_file_limit().is_some_and(|n| n > 0));
        }
    }
}
