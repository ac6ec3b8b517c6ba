//! Wake-ups across workers on PostgreSQL: a schedule added, changed or triggered by any
//! process is announced on a channel (`pg_notify`, sent at commit by the schedules'
//! triggers), and a worker listening there looks at once, where otherwise it would notice
//! at its next change check. The check stays: a notification lost while the listening
//! connection was down is caught by it, and each new connection wakes its listener once.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;
use tokio_postgres::tls::MakeTlsConnect;
use tokio_postgres::{AsyncMessage, Socket};
use tokio_postgres_rustls::MakeRustlsConnect;

/// The channel the schedules' triggers notify.
pub const SCHEDULES_CHANNEL: &str = "nightshift_schedules";

/// The longest wait before connecting again after the listening connection failed.
const MAX_BACKOFF: Duration = Duration::from_secs(10);

/// Notifications on one channel, for as long as it lives (dropped, it stops listening).
pub struct Listener {
    notify: Arc<Notify>,
    task: tokio::task::JoinHandle<()>,
}

impl Listener {
    /// Listens on `channel` over a connection of its own, connecting again when it fails.
    pub fn start(
        config: tokio_postgres::Config,
        tls: Option<MakeRustlsConnect>,
        channel: &'static str,
    ) -> Self {
        let notify = Arc::new(Notify::new());
        let task = tokio::spawn(listen(config, tls, channel, notify.clone()));
        Self { notify, task }
    }

    /// Woken (`notify_one`) on each notification, and after each new connection.
    pub fn notified(&self) -> &Arc<Notify> {
        &self.notify
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn listen(
    config: tokio_postgres::Config,
    tls: Option<MakeRustlsConnect>,
    channel: &'static str,
    notify: Arc<Notify>,
) {
    let mut backoff = Duration::from_millis(100);
    loop {
        let listened = match &tls {
            Some(tls) => listen_once(&config, tls.clone(), channel, &notify).await,
            None => listen_once(&config, tokio_postgres::NoTls, channel, &notify).await,
        };
        match listened {
            Ok(()) => backoff = Duration::from_millis(100),
            Err(err) => {
                tracing::warn!(%err, channel, "listening for changes on PostgreSQL failed; connecting again");
            }
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

/// One connection's life: LISTEN, then a wake-up per notification until it ends.
async fn listen_once<T>(
    config: &tokio_postgres::Config,
    tls: T,
    channel: &'static str,
    notify: &Notify,
) -> Result<(), tokio_postgres::Error>
where
    T: MakeTlsConnect<Socket>,
    T::Stream: Send + 'static,
{
    let (client, mut connection) = config.connect(tls).await?;
    let (messages, mut received) = tokio::sync::mpsc::unbounded_channel();
    // The connection does its work (the LISTEN's answer included) only while polled.
    let driver = tokio::spawn(async move {
        loop {
            let message = std::future::poll_fn(|cx| connection.poll_message(cx)).await;
            match message {
                Some(Ok(message)) => {
                    if messages.send(message).is_err() {
                        return Ok(());
                    }
                }
                Some(Err(err)) => return Err(err),
                None => return Ok(()),
            }
        }
    });
    client.batch_execute(&format!("LISTEN {channel}")).await?;
    // Whatever was announced while no connection listened is looked at now.
    notify.notify_one();
    while let Some(message) = received.recv().await {
        if let AsyncMessage::Notification(_) = message {
            notify.notify_one();
        }
    }
    drop(client);
    match driver.await {
        Ok(result) => result,
        Err(_) => Ok(()),
    }
}
