//! systemd's notify protocol. Every call is a no-op when not started by systemd.

use sd_notify::NotifyState;

pub fn ready() {
    notify(&[NotifyState::Ready]);
}

pub fn stopping() {
    notify(&[NotifyState::Stopping]);
}

/// Tells systemd the scheduler loop is alive; sent from the loop itself so a stuck loop
/// gets the service restarted.
pub fn watchdog() {
    notify(&[NotifyState::Watchdog]);
}

fn notify(state: &[NotifyState]) {
    if std::env::var_os("NOTIFY_SOCKET").is_none() {
        return;
    }
    if let Err(err) = sd_notify::notify(state) {
        tracing::warn!(%err, "cannot notify systemd");
    }
}
