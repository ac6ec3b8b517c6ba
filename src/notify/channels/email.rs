//! The `email` channel: a message sent over SMTP by lettre, to the address the channel
//! context names (`mail:alice@example.org`), with a plain-text and an HTML part and the
//! run's link. TLS unless the URL says otherwise: `smtp://` upgrades with STARTTLS (and
//! refuses a server that cannot), `smtps://` speaks TLS from the start, and
//! `smtp://…?tls=none` is plain text, for a relay on the same machine only.

use std::time::Duration;

use lettre::message::{Mailbox, MultiPart};
use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::client::{Tls, TlsParameters};
use lettre::{AsyncSmtpTransport, AsyncTransport, Message as Email, Tokio1Executor};
use serde_json::Value;

use super::{render_text, DeliveryError, Secret};
use crate::smtp_url::Security;
use crate::text::truncate_chars;

/// Characters of a subject line.
const SUBJECT_CHARS: usize = 200;

/// An email channel, its server and sender checked when loaded.
#[derive(Clone)]
pub(super) struct EmailChannel {
    transport: AsyncSmtpTransport<Tokio1Executor>,
    from: Mailbox,
    /// The whole exchange's limit: lettre's own covers the connect alone, and a server
    /// that accepts and then stalls must not hold the sender's pass.
    timeout: Duration,
}

impl std::fmt::Debug for EmailChannel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmailChannel")
            .field("from", &self.from.to_string())
            .finish_non_exhaustive()
    }
}

impl EmailChannel {
    /// The channel of `url`, sending as `from`, logging in with the secret (and the URL's
    /// user) when there is one.
    pub(super) fn new(
        url: &str,
        from: &str,
        secret: Option<&Secret>,
        timeout: Duration,
    ) -> Result<Self, String> {
        let server = crate::smtp_url::parse(url)?;
        let from: Mailbox = from
            .parse()
            .map_err(|e| format!("`from` is not an address: {e}"))?;
        let tls = || TlsParameters::new(server.host.clone()).map_err(|e| e.to_string());
        let mut builder = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(&server.host)
            .port(server.port)
            .timeout(Some(timeout));
        builder = match server.security {
            Security::StartTls => builder.tls(Tls::Required(tls()?)),
            Security::Tls => builder.tls(Tls::Wrapper(tls()?)),
            Security::None => builder,
        };
        if let Some(Secret(password)) = secret {
            let user = server
                .user
                .clone()
                .unwrap_or_else(|| from.email.to_string());
            builder = builder.credentials(Credentials::new(user, password.clone()));
        }
        Ok(Self {
            transport: builder.build(),
            from,
            timeout,
        })
    }

    /// Sends `payload` to `to`. The Message-ID is made from `key` (the message's
    /// idempotency key), so a retry the server already took is recognisable as the same.
    pub(super) async fn send(
        &self,
        to: &str,
        key: &str,
        payload: &Value,
    ) -> Result<(), DeliveryError> {
        let to: Mailbox = to
            .parse()
            .map_err(|e| DeliveryError::permanent(format!("`{to}` is not an address: {e}")))?;
        let summary = payload["summary"].as_str().unwrap_or("nightshift");
        let subject = truncate_chars(summary.lines().next().unwrap_or_default(), SUBJECT_CHARS);
        let text = render_text(payload);
        let id = blake3::hash(key.as_bytes()).to_hex();
        let email = Email::builder()
            .from(self.from.clone())
            .to(to)
            .subject(subject)
            .message_id(Some(format!("<{}@nightshift>", &id[..32])))
            .multipart(MultiPart::alternative_plain_html(
                text.clone(),
                html(&text, payload["run_url"].as_str()),
            ))
            .map_err(|e| DeliveryError::permanent(format!("cannot build the message: {e}")))?;
        match tokio::time::timeout(self.timeout, self.transport.send(email)).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(err)) => Err(failure(&err)),
            Err(_) => Err(DeliveryError {
                reason: format!(
                    "SMTP: the server took more than {} s (notify.timeout_secs)",
                    self.timeout.as_secs()
                ),
                retry_after: None,
                permanent: false,
                progress: 0,
            }),
        }
    }
}

/// What a failed send means for the message: a 5xx answer, a TLS failure or a server that
/// cannot do what the channel needs (STARTTLS, a login mechanism) will not succeed by
/// itself (dead at once, `outbox retry` once it is mended); a 4xx answer, a time-out or a
/// server out of reach is tried again.
fn failure(err: &lettre::transport::smtp::Error) -> DeliveryError {
    let reason = format!("SMTP: {}", crate::error::error_chain(err));
    let reason = truncate_chars(&reason, 300).to_string();
    if err.is_permanent() || err.is_tls() || err.is_client() {
        DeliveryError::permanent(reason)
    } else {
        DeliveryError {
            reason,
            retry_after: None,
            permanent: false,
            progress: 0,
        }
    }
}

/// The HTML part: the same text, escaped, and the run's link as a link.
fn html(text: &str, run_url: Option<&str>) -> String {
    let body = maud::html! {
        (maud::DOCTYPE)
        html {
            head { meta charset="utf-8"; }
            body {
                pre style="white-space: pre-wrap; font-family: inherit" { (text) }
                @if let Some(url) = run_url {
                    p { a href=(url) { "Open the run" } }
                }
            }
        }
    };
    body.into_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_html_part_escapes_the_text() {
        let page = html("<b>5 > 3</b> & more", Some("https://n.example/v1/runs/r1"));
        assert!(
            page.contains("&lt;b&gt;5 &gt; 3&lt;/b&gt; &amp; more"),
            "{page}"
        );
        assert!(
            page.contains(r#"<a href="https://n.example/v1/runs/r1">"#),
            "{page}"
        );
    }
}
