//! What the native client and the worker simulator share on the socket side: the one runtime
//! thread they run on ([`runtime`]) and how a connection is closed without a reset
//! ([`discard_until_closed`]).

mod thread;

pub use thread::{runtime, RuntimeLease};

use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Shuts our writing side, then reads and drops whatever the peer still sends until it closes
/// or `limit` passes: closing with unread input would make the kernel send a reset, which can
/// overtake the close frame we just wrote.
pub async fn discard_until_closed<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    limit: Duration,
) {
    let _ = tokio::time::timeout(limit, async {
        let _ = stream.shutdown().await;
        let mut discard = vec![0u8; 64 * 1024];
        while matches!(stream.read(&mut discard).await, Ok(n) if n > 0) {}
    })
    .await;
}
