//! # vigil-fake-phone
//!
//! The far ends of Vigil's channels, scripted, on loopback: a fake **ntfy** server
//! ([`FakeNtfy`]: JSON publish, raw publish as a phone's `http` action does it, the JSON
//! stream subscribe with `since=`, access-token auth) and a fake **Telegram Bot API**
//! ([`FakeTelegram`]: `getUpdates` long poll, `sendMessage`, `editMessageText`,
//! `answerCallbackQuery`, inline keyboards). Tests drive the "phone" side through the
//! handles (a user sends a message, presses a button) and read what Vigil sent.
//!
//! ## Layout
//!
//! - [`ntfy`] — [`FakeNtfy`], its recorded [`ntfy::Published`] pushes.
//! - [`telegram`] — [`FakeTelegram`], its chat state ([`telegram::Sent`]).
//! - `main.rs` — both on fixed or free ports for the end-to-end tests, driven over HTTP
//!   control routes (`/_…`).
//!
//! Must never: listen anywhere but loopback, or need the network.

pub mod ntfy;
pub mod telegram;

pub use ntfy::FakeNtfy;
pub use telegram::FakeTelegram;

use std::net::SocketAddr;

use tokio_util::sync::CancellationToken;

/// Serves `app` on `addr` until `stop` is cancelled; returns the bound address.
async fn serve(app: axum::Router, addr: SocketAddr, stop: CancellationToken) -> std::io::Result<SocketAddr> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    tokio::spawn(async move {
        let _ = axum::serve(listener, app)
            .with_graceful_shutdown(async move { stop.cancelled().await })
            .await;
    });
    Ok(bound)
}

/// Loopback at a free port.
pub fn loopback() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 0))
}
