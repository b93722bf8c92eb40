//! Call quality's threads: the reader that takes the RTCP the workers copy
//! into the call table, and the Homer sender that ships each report as
//! HEP3 (rtpengine's `--homer`). Neither ever blocks a worker: the workers
//! hand RTCP over through a bounded queue, the reader hands HEP packets to
//! the sender through another, and a full queue drops and counts.

use super::config::HomerConfig;
use super::Shared;
use srtpgate_quality::{hep, RtcpCopy};
use std::io::Write as _;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Weak};
use std::time::Duration;

/// RTCP packets queued between the workers and the reader (a phone sends
/// one every few seconds: 4096 is a second of 20 000 calls' reports).
pub const RTCP_QUEUE: usize = 4096;
/// HEP packets queued for the sender (rtpengine's send queue is 1024 long).
pub const HOMER_QUEUE: usize = 1024;
/// Most RTCP packets the reader takes per hold of the control lock.
const PER_LOCK: usize = 64;

/// Counters of the Homer sender.
#[derive(Debug, Default)]
pub struct HomerStats {
    /// HEP packets sent.
    pub sent: AtomicU64,
    /// HEP packets dropped: the queue full, or not encodable (too long).
    pub dropped: AtomicU64,
    /// HEP packets the transport refused (the collector down; TCP reconnects).
    pub failed: AtomicU64,
}

/// Starts the reader (and, with `homer`, the sender) over `rx`.
pub fn start(
    shared: &Arc<Shared>,
    rx: crossbeam_channel::Receiver<RtcpCopy>,
    homer: Option<HomerConfig>,
) -> Result<(), String> {
    let hep_tx = match homer {
        Some(h) => {
            let (tx, hep_rx) = crossbeam_channel::bounded::<Vec<u8>>(HOMER_QUEUE);
            let stats = shared.homer.clone();
            std::thread::Builder::new()
                .name("homer".into())
                .spawn(move || send_loop(hep_rx, &h, &stats))
                .map_err(|e| format!("cannot start the Homer thread: {e}"))?;
            tracing::info!(
                "RTCP reports go to Homer at {} {} (capture ID {})",
                if h.tcp { "tcp" } else { "udp" },
                h.addr,
                h.id
            );
            Some((tx, h.id))
        }
        None => None,
    };
    let weak = Arc::downgrade(shared);
    std::thread::Builder::new()
        .name("rtcp".into())
        .spawn(move || read_loop(weak, rx, hep_tx))
        .map_err(|e| format!("cannot start the call quality thread: {e}"))?;
    Ok(())
}

/// The reader: each RTCP packet into its call's book, up to [`PER_LOCK`]
/// per hold of the control lock; with Homer, each as a HEP packet to the
/// sender. Ends when the workers stop.
fn read_loop(
    shared: Weak<Shared>,
    rx: crossbeam_channel::Receiver<RtcpCopy>,
    hep_tx: Option<(crossbeam_channel::Sender<Vec<u8>>, u32)>,
) {
    let mut batch = Vec::with_capacity(PER_LOCK);
    let mut records = Vec::with_capacity(PER_LOCK);
    while let Ok(first) = rx.recv() {
        batch.push(first);
        batch.extend(rx.try_iter().take(PER_LOCK - 1));
        let Some(shared) = shared.upgrade() else { return };
        match shared.control.lock() {
            Ok(mut c) => {
                for r in &batch {
                    if let Some(rec) = c.table.rtcp_report(r, hep_tx.is_some()) {
                        records.push(rec);
                    }
                }
            }
            Err(_) => return,
        }
        batch.clear();
        let Some((tx, id)) = &hep_tx else { continue };
        for rec in records.drain(..) {
            let mut out = Vec::with_capacity(rec.json.len() + 128);
            let meta = hep::Meta {
                src: rec.src,
                dst: rec.dst,
                unix_us: rec.unix_us,
                capture_id: *id,
                correlation: &rec.call_id,
            };
            let queued = hep::encode(&mut out, &meta, hep::PROTO_RTCP_JSON, rec.json.as_bytes()).is_some()
                && tx.try_send(out).is_ok();
            if !queued {
                shared.homer.dropped.fetch_add(1, Relaxed);
            }
        }
    }
}

/// The sender: UDP datagrams, or a TCP stream reconnected with a back-off
/// when it breaks (what arrives meanwhile is counted as failed).
fn send_loop(rx: crossbeam_channel::Receiver<Vec<u8>>, h: &HomerConfig, stats: &HomerStats) {
    let udp = if h.tcp {
        None
    } else {
        let bind = if h.addr.is_ipv4() { "0.0.0.0:0" } else { "[::]:0" };
        match std::net::UdpSocket::bind(bind) {
            Ok(s) => Some(s),
            Err(e) => {
                tracing::error!("homer: cannot open a UDP socket: {e}");
                return;
            }
        }
    };
    let mut tcp: Option<std::net::TcpStream> = None;
    let mut retry_at = std::time::Instant::now();
    let mut backoff = Duration::from_millis(500);
    for packet in rx.iter() {
        let sent = match &udp {
            Some(s) => s.send_to(&packet, h.addr).is_ok(),
            None => {
                if tcp.is_none() && std::time::Instant::now() >= retry_at {
                    match std::net::TcpStream::connect_timeout(&h.addr, Duration::from_secs(2)) {
                        Ok(s) => {
                            let _ = s.set_write_timeout(Some(Duration::from_secs(2)));
                            let _ = s.set_nodelay(true);
                            tracing::info!("homer: connected to {}", h.addr);
                            backoff = Duration::from_millis(500);
                            tcp = Some(s);
                        }
                        Err(e) => {
                            tracing::warn!("homer: cannot connect to {}: {e}", h.addr);
                            retry_at = std::time::Instant::now() + backoff;
                            backoff = (backoff * 2).min(Duration::from_secs(30));
                        }
                    }
                }
                match tcp.as_mut().map(|s| s.write_all(&packet)) {
                    Some(Ok(())) => true,
                    Some(Err(e)) => {
                        tracing::warn!("homer: {} closed: {e}", h.addr);
                        tcp = None;
                        retry_at = std::time::Instant::now() + backoff;
                        false
                    }
                    None => false,
                }
            }
        };
        (if sent { &stats.sent } else { &stats.failed }).fetch_add(1, Relaxed);
    }
}
