//! What the relay's integration tests share.

use srtp::{Context, Engine};
use srtpgate_relay::worker::LegConfig;
use std::net::SocketAddr;

/// A leg that sends to `rtp` and `rtcp` (its SDP's addresses),
/// unprotecting with `rx` and protecting with `tx` (`None`: plain RTP),
/// with nothing else: no rtcp-mux, transcoding, handover, ICE/DTLS or
/// bundle. A test that needs more sets those fields on it.
pub fn leg<E: Engine>(
    rtp: SocketAddr,
    rtcp: SocketAddr,
    rx: Option<Context<E>>,
    tx: Option<Context<E>>,
) -> LegConfig<E> {
    LegConfig {
        peer: Some((Some(rtp), Some(rtcp))),
        rtcp_mux: false,
        rx: Some(rx),
        tx: Some(tx),
        tx_key: 0,
        reserving: false,
        handover: false,
        transcode: Some(None),
        demux: false,
        keys_pending: false,
        bundle: None,
        payload_types: Vec::new(),
        mid_ext: None,
        kinds: None,
    }
}
#[allow(dead_code)]
pub mod rounds;
