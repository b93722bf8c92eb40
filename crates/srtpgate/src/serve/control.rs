//! The control plane's state behind one lock: the call table, the data
//! plane it commands, and the Redis store its kept calls go to. Every entry
//! point hands the table its input with the time, then carries out what the
//! table queued: commands to the workers, writes to the store.

use super::config::Config;
use super::plane::{leg_state, Plane};
use super::redis_store::{Loaded, Store};
use srtpgate_calls::{Now, Persist, Signal, Table};
use srtpgate_codec::Registry;
use srtpgate_ng::{Request, Value};
use srtpgate_webrtc::dtls::Identity;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// The call table, the workers and the store.
pub struct Control {
    /// The call table.
    pub table: Table,
    /// The workers.
    pub plane: Box<dyn Plane>,
    /// Where kept calls go (`--redis`).
    store: Option<Store>,
    /// [`Store::recoveries`] when last seen.
    recoveries: u64,
    /// Where recordings are written (`--recording-dir`).
    pub recorder: Option<super::recorder::Recorder>,
}

/// Now, on both clocks.
pub fn now() -> Now {
    Now { mono: Instant::now(), wall: SystemTime::now() }
}

/// The codecs of `--codec-plugin-dir` (plugins that do not load are
/// logged), and the relay's DTLS certificate (from files, or made now).
pub fn load(cfg: &Config) -> Result<(Registry, Identity), String> {
    let mut codecs = Registry::new();
    if let Some(dir) = &cfg.codec_plugin_dir {
        for e in codecs.load_dir(dir).map_err(|e| format!("codec-plugin-dir: {e}"))? {
            tracing::error!("codec plugin not loaded: {e}");
        }
    }
    for p in codecs.plugins() {
        let names: Vec<String> = p.codecs().iter().map(|c| format!("{}/{}", c.name, c.clock_rate)).collect();
        tracing::info!(plugin = p.name(), version = p.version(), "codecs: {}", names.join(" "));
    }
    let identity = match &cfg.dtls_certificate {
        Some((cert, key)) => {
            let read = |p: &std::path::Path| {
                std::fs::read_to_string(p).map_err(|e| format!("dtls certificate file {}: {e}", p.display()))
            };
            Identity::from_pem(&read(cert)?, &read(key)?).map_err(|e| e.to_string())?
        }
        None => Identity::generate().map_err(|e| e.to_string())?,
    };
    tracing::info!("DTLS certificate fingerprint: {}", identity.fingerprint());
    Ok((codecs, identity))
}

impl Control {
    /// A call table over `plane`, configured by `cfg`.
    pub fn new(cfg: &Config, plane: Box<dyn Plane>) -> Result<Control, String> {
        let (codecs, identity) = load(cfg)?;
        let table = Table::new(cfg.table_settings(), Arc::new(codecs), Arc::new(identity), now());
        Ok(Control { table, plane, store: None, recoveries: 0, recorder: None })
    }

    /// Carries out what the table queued.
    fn flush(&mut self) {
        // The recorder first: a recording is open before its call's worker
        // is told to copy packets to it.
        self.flush_recorder();
        while let Some(c) = self.table.poll_command() {
            self.plane.apply(c);
        }
        let Some(store) = &self.store else { return };
        while let Some(p) = self.table.poll_persist() {
            match p {
                Persist::Put(record) => store.put_call(&record),
                Persist::Delete(id) => store.delete(&id),
                Persist::Fields { id, fields, then } => {
                    let then = then.into_iter().map(|c| self.plane.deferred(c)).collect();
                    store.put_fields(&id, fields, then);
                }
            }
        }
    }

    /// One NG request; its reply. A relay fenced off Redis (another took
    /// its lease over) drains: no new calls, `/health` says so.
    pub fn handle(&mut self, req: &Request) -> Value {
        self.drain_if_fenced();
        let v = self.table.handle(req, now(), &mut *self.plane);
        self.flush();
        v
    }

    /// Ends the calls the timeouts ended.
    pub fn expire(&mut self) -> usize {
        let n = self.table.expire(now(), &mut *self.plane);
        self.table.sample_quality(now());
        self.flush();
        n
    }

    /// A STUN or DTLS datagram a worker handed over.
    pub fn signal(&mut self, sig: &crate::relay::worker::Signal) {
        let s = Signal { call: sig.call, stream: sig.stream, party: sig.party, from: sig.from, data: &sig.data };
        self.table.signal(s, now());
        self.flush();
    }

    /// The DTLS retransmission timers.
    pub fn web_tick(&mut self) {
        self.table.web_tick(now());
        self.flush();
    }

    /// Starts, pauses or stops a call's recording from the management page.
    pub fn record(&mut self, call_id: &str, what: srtpgate_calls::recording::Operator) -> Result<String, String> {
        let r = self.table.operator_recording(call_id, what, now());
        self.flush();
        r
    }

    /// Ends a call from the management page.
    pub fn end_call(&mut self, call_id: &str) -> Result<(), String> {
        let r = self.table.end_call(call_id, &mut *self.plane);
        self.flush();
        r
    }

    /// Ends every call (at shutdown); calls kept in Redis stay there.
    pub fn clear(&mut self) {
        self.table.clear(&mut *self.plane);
        while let Some(c) = self.table.poll_command() {
            self.plane.apply(c);
        }
        self.flush_recorder();
        // Forgetting them in Redis is what a stop must not do.
        while self.table.poll_persist().is_some() {}
    }

    /// Hands the recorder the table's recording steps.
    fn flush_recorder(&mut self) {
        while let Some(e) = self.table.poll_recorder() {
            if let Some(r) = &self.recorder {
                r.send(e);
            }
        }
    }

    /// Keeps the calls in `store` from now on, after resuming `loaded`.
    pub fn keep_in(&mut self, store: Store, loaded: Vec<Loaded>) -> (usize, usize) {
        self.store = Some(store);
        let r = self.table.keep_calls(loaded, now(), &mut *self.plane);
        self.flush();
        r
    }

    /// The Redis counters: failed operations, batches written, writes
    /// waiting, and whether the relay is fenced.
    pub fn keep_counters(&self) -> Option<(u64, u64, u64, bool)> {
        self.store
            .as_ref()
            .map(|s| (s.errors.load(Relaxed), s.batches.load(Relaxed), s.pending.load(Relaxed), s.fenced.load(Relaxed)))
    }

    /// Raises the reservations from the workers' reports (`flush`: every
    /// receiving stream written too, at a clean stop). Redis that answered
    /// again after failures (perhaps restarted, empty) gets every record
    /// and reservation in force again.
    pub fn keep_states(&mut self, states: Vec<crate::relay::worker::LegState>, flush: bool) {
        let recovered = self.store.as_ref().map(|s| s.recoveries.load(Relaxed)).filter(|&r| r != self.recoveries);
        if let Some(r) = recovered {
            self.recoveries = r;
            self.table.rewrite_kept();
        }
        self.drain_if_fenced();
        self.table.keep_states(states.into_iter().map(leg_state).collect(), now(), flush);
        self.flush();
    }

    /// A relay fenced off Redis takes no new calls.
    fn drain_if_fenced(&mut self) {
        if self.store.as_ref().is_some_and(|s| s.fenced.load(Relaxed)) && !self.table.draining() {
            tracing::error!("redis: fenced: this relay takes no new calls (draining)");
            self.table.set_draining(true);
        }
    }

    /// Gives the Redis lease up after the writes queued (a clean stop).
    pub fn release_lease(&self) {
        if let Some(s) = &self.store {
            s.release();
        }
    }

    /// Waits up to `within` for the store to have every write queued.
    pub fn written(&self, within: Duration) -> bool {
        self.store.as_ref().is_none_or(|s| s.written(within))
    }
}
