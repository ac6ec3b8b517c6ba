//! The listening socket: plain HTTP or HTTPS (rustls), HTTP/1 and HTTP/2, a client that does
//! not finish its headers in time dropped, and a graceful stop — no new connections, the
//! requests in flight finished within the grace period.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

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
        })
    }

    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.listener.local_addr().ok()
    }

    pub fn is_tls(&self) -> bool {
        self.tls.is_some()
    }

    /// Serves until `stop`, then lets the requests in flight finish within `grace`.
    pub async fn serve(self, stop: CancellationToken, grace: Duration) {
        let graceful = GracefulShutdown::new();
        let mut builder = Builder::new(TokioExecutor::new());
        builder
            .http1()
            .timer(TokioTimer::new())
            .header_read_timeout(self.header_timeout);
        builder.http2().timer(TokioTimer::new());
        loop {
            let (stream, _peer) = tokio::select! {
                _ = stop.cancelled() => break,
                accepted = self.listener.accept() => match accepted {
                    Ok(accepted) => accepted,
                    Err(err) => {
                        // Out of file descriptors, say: wait a moment rather than spin.
                        tracing::warn!(%err, "cannot accept a connection");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                },
            };
            let service = TowerToHyperService::new(self.router.clone());
            let builder = builder.clone();
            let watcher = graceful.watcher();
            match self.tls.clone() {
                None => {
                    tokio::spawn(async move {
                        let conn =
                            builder.serve_connection_with_upgrades(TokioIo::new(stream), service);
                        let _ = watcher.watch(conn.into_owned()).await;
                    });
                }
                Some(acceptor) => {
                    let handshake_within = self.header_timeout;
                    tokio::spawn(async move {
                        let tls =
                            match tokio::time::timeout(handshake_within, acceptor.accept(stream))
                                .await
                            {
                                Ok(Ok(tls)) => tls,
                                Ok(Err(err)) => {
                                    tracing::debug!(%err, "TLS handshake failed");
                                    return;
                                }
                                Err(_) => return,
                            };
                        let conn =
                            builder.serve_connection_with_upgrades(TokioIo::new(tls), service);
                        let _ = watcher.watch(conn.into_owned()).await;
                    });
                }
            }
        }
        // No new connections from here (the listener is dropped); those open finish the
        // request they are on, within the grace period.
        drop(self.listener);
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
