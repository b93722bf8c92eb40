//! The data plane as the control plane sees it: the call table's
//! [`Command`]s carried out on the media workers, and the port pairs and
//! worker liveness the table asks for ([`Resources`]).
//!
//! This is the one place above the workers that knows the crypto engine:
//! [`Relay`] builds each SRTP context from the table's [`Keying`] with its
//! engine. Everything else (the table, NG, HTTP, the management page) holds
//! a `dyn Plane` and is not generic over the engine.

use crate::relay::ports::{PortPair, PortSet};
use crate::relay::stats::{Histogram, LegSnapshot, WorkerStats};
use crate::relay::worker::{self, Cmd, LegConfig, LegSockets};
use crate::relay::WorkerHandle;
use crate::serve::redis_store::Then;
use srtp::{Context, Engine, EngineStats};
use srtpgate_calls::interface::{Binding, Pair};
use srtpgate_calls::{Command, Keying, LegSetup, LegState, Load, PromptSource, Resources};
use srtpgate_codec::prompt::Prompt;
use std::cell::Cell;
use std::collections::HashMap;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::mpsc::Receiver;
use std::sync::Arc;
use std::time::Duration;
use std::time::Instant;

/// What the control plane needs of the workers.
pub trait Plane: Resources + Send {
    /// Carries out one command of the call table.
    fn apply(&mut self, c: Command);
    /// A command to carry out later, from another thread (a reservation,
    /// once Redis holds it).
    fn deferred(&self, c: Command) -> Then;
    /// Asks every running worker where its legs' contexts stand; the
    /// answers come on the returned channels (read them without holding
    /// the call table).
    fn ask_states(&self) -> Vec<Receiver<Vec<worker::LegState>>>;
    /// The workers' counters, and whether each runs.
    fn workers(&self) -> Vec<(Arc<WorkerStats>, bool)>;
    /// The engine's counters, where it keeps any.
    fn engine_stats(&self) -> Option<EngineStats>;
    /// Port pairs in use and in the range.
    fn ports(&self) -> (usize, usize);
    /// Caps the files media sockets may hold (see [`PortSet::fd_budget`]).
    fn set_fd_budget(&mut self, files: usize);
    /// The count of files held under the same budget by others (the
    /// recorder), see [`PortSet::elsewhere`].
    fn files_elsewhere(&self) -> Arc<std::sync::atomic::AtomicUsize>;
}

/// The media workers, their engine and the interfaces' port ranges.
pub struct Relay<E: Engine> {
    engine: E,
    workers: Vec<WorkerHandle<E>>,
    ports: PortSet,
    /// Port pairs bound for streams the table has not yet sent to a worker.
    pending: HashMap<Pair, PortPair>,
    /// The load as last sampled, and the counters it was sampled from.
    load: Cell<LoadSample>,
    /// The prompts `play media` plays.
    pub prompts: crate::serve::prompts::Prompts,
}

/// The workers' busy time and received bytes at one instant, and the load
/// computed from the sample before.
#[derive(Clone, Copy)]
struct LoadSample {
    at: Instant,
    busy_ns: u64,
    bytes_in: u64,
    load: Load,
}

/// How long a load sample stands: offers in between read it again, so an
/// offer costs no walk over the workers' counters.
const LOAD_SAMPLE: Duration = Duration::from_millis(500);

impl<E: Engine + Clone + 'static> Relay<E>
where
    E::Keys: 'static,
{
    /// The workers over `ports` (each interface's range with its socket
    /// buffer size).
    pub fn new(engine: E, workers: Vec<WorkerHandle<E>>, ports: PortSet) -> Relay<E> {
        let load = LoadSample { at: Instant::now(), busy_ns: 0, bytes_in: 0, load: Load::default() };
        let prompts = crate::serve::prompts::Prompts::new(None).expect("no directory to resolve");
        Relay { engine, workers, ports, pending: HashMap::new(), load: Cell::new(load), prompts }
    }

    fn send(&self, worker: usize, cmd: Cmd<E>) {
        match self.workers.get(worker) {
            Some(w) => w.send(cmd),
            None => tracing::error!(worker, "a command for a worker that does not exist"),
        }
    }

    /// A context of `k` with this relay's engine, resumed where it was
    /// kept (`sending`: its indices are reserved before use).
    fn context(&self, k: Keying, sending: bool) -> Result<Context<E>, String> {
        let mut ctx = Context::new(k.policy, self.engine.clone()).map_err(|e| e.to_string())?;
        if let Some(r) = k.resume {
            if sending {
                ctx.set_reserving(true);
            } else {
                // What was kept of a stream it receives may be a rollover
                // behind its sender, or missing.
                ctx.resume_rx();
            }
            if !r.key_uses.is_empty() || !r.streams.is_empty() {
                ctx.resume_key_uses(&r.key_uses);
            }
            for st in &r.streams {
                // A stream the context has no room for cannot be sent on,
                // so its indices do not matter.
                if let Err(e) = ctx.resume(st) {
                    tracing::warn!("kept index of SSRC {:08x} not resumed: {e}", st.ssrc);
                }
            }
        }
        Ok(ctx)
    }

    /// A leg's configuration for its worker. A context that cannot be made
    /// (the table checked the policy, so only the engine can refuse) leaves
    /// the leg waiting for keys: its media is dropped, never sent in clear.
    fn config(&self, s: LegSetup) -> LegConfig<E> {
        let mut failed = false;
        let mut ctx = |k: Option<Option<Keying>>, sending: bool| -> Option<Option<Context<E>>> {
            match k? {
                None => Some(None),
                Some(k) => match self.context(k, sending) {
                    Ok(c) => Some(Some(c)),
                    Err(e) => {
                        tracing::error!("SRTP context not made: {e}");
                        failed = true;
                        None
                    }
                },
            }
        };
        let rx = ctx(s.rx, false);
        let tx = ctx(s.tx, true);
        LegConfig {
            peer: s.peer,
            rtcp_mux: s.rtcp_mux,
            rx,
            tx,
            tx_key: s.tx_key,
            reserving: s.reserving,
            handover: s.handover,
            transcode: s.transcode,
            demux: s.demux,
            keys_pending: s.keys_pending || failed,
            bundle: s.bundle,
            payload_types: s.payload_types,
            mid_ext: s.mid_ext,
            kinds: s.kinds,
        }
    }

    fn worker_cmd(&mut self, c: Command) -> Option<(usize, Cmd<E>)> {
        Some(match c {
            Command::AddStream { worker, call, stream, ports, stats } => {
                let [s0, s1] = stats;
                let (Some(p0), Some(p1)) = (self.pending.remove(&ports[0]), self.pending.remove(&ports[1])) else {
                    tracing::error!(call, stream, "a stream whose port pairs were not bound");
                    return None;
                };
                let legs = [
                    LegSockets { rtp: p0.rtp, rtcp: p0.rtcp, stats: s0 },
                    LegSockets { rtp: p1.rtp, rtcp: p1.rtcp, stats: s1 },
                ];
                (worker, Cmd::AddStream { call, stream, legs })
            }
            Command::Configure { worker, call, stream, party, setup } => {
                (worker, Cmd::Configure { call, stream, party, config: Box::new(self.config(*setup)) })
            }
            Command::RemoveStream { worker, call, stream } => (worker, Cmd::RemoveStream { call, stream }),
            Command::RemoveCall { worker, call } => (worker, Cmd::RemoveCall { call }),
            Command::Keys { worker, call, stream, party, rx, tx, tx_key, reserving } => {
                let tx = self.context(*tx, true).map(|mut c| {
                    c.set_reserving(reserving);
                    c
                });
                match (self.context(*rx, false), tx) {
                    (Ok(rx), Ok(tx)) => {
                        (worker, Cmd::Keys { call, stream, party, rx: Box::new(rx), tx: Box::new(tx), tx_key })
                    }
                    (Err(e), _) | (_, Err(e)) => {
                        tracing::error!(call, "DTLS-SRTP keys unusable: {e}");
                        return None;
                    }
                }
            }
            Command::Latch { worker, call, stream, party, peer } => (worker, Cmd::Latch { call, stream, party, peer }),
            Command::Record { worker, call, on } => (worker, Cmd::Record { call, on }),
            Command::AddFork { worker, call, stream, party, fork, port, stats } => {
                let Some(p) = self.pending.remove(&port) else {
                    tracing::error!(call, stream, "a fork whose port pair was not bound");
                    return None;
                };
                let fork = worker::ForkSockets { key: fork, rtp: p.rtp, rtcp: p.rtcp, stats };
                (worker, Cmd::AddFork { call, stream, party, fork })
            }
            Command::ConfigureFork { worker, call, fork, setup } => {
                let tx = match setup.tx.map(|k| self.context(k, true)).transpose() {
                    Ok(tx) => tx,
                    Err(e) => {
                        // The fork stays unanswered: nothing is copied, never
                        // sent in clear.
                        tracing::error!(call, fork, "a subscriber's SRTP context not made: {e}");
                        return None;
                    }
                };
                let config =
                    worker::ForkConfig { peer: setup.peer, tx, ssrc: setup.ssrc, clock_rate: setup.clock_rate };
                (worker, Cmd::ConfigureFork { call, fork, config: Box::new(config) })
            }
            Command::RemoveFork { worker, call, fork } => (worker, Cmd::RemoveFork { call, fork }),
            Command::Play { worker, call, stream, party, player, prompt, digit } => {
                let play = worker::Play { player: *player, prompt, digit };
                (worker, Cmd::Play { call, stream, party, play: Box::new(play) })
            }
            Command::StopPlay { worker, call, stream, party } => (worker, Cmd::StopPlay { call, stream, party }),
            Command::Send { worker, call, stream, party, to, data } => {
                (worker, Cmd::Send { call, stream, party, to, data })
            }
            Command::Reserve { worker, call, stream, party, key, ssrc, rtp, rtcp } => {
                (worker, Cmd::Reserve { call, stream, party, key, ssrc, rtp, rtcp })
            }
            Command::MoveCall { worker, call, to } => {
                // Waits (briefly) until the old worker has put the call in the
                // new one's queue, so that later commands reach the new worker
                // after it.
                let mover = self.workers.get(to).map(WorkerHandle::mover)?;
                let (done_tx, done_rx) = std::sync::mpsc::sync_channel(1);
                self.send(worker, Cmd::MoveCall { call, to: mover, done: done_tx });
                match done_rx.recv_timeout(Duration::from_secs(1)) {
                    Ok(streams) => {
                        tracing::debug!(call, from = worker, to, streams, "call moved to a transcoding worker")
                    }
                    Err(e) => tracing::error!(call, from = worker, to, "moving a call to a transcoding worker: {e}"),
                }
                return None;
            }
        })
    }
}

impl<E: Engine + Clone + 'static> Resources for Relay<E>
where
    E::Keys: 'static,
{
    fn allocate(&mut self, at: Binding) -> Result<u16, String> {
        let p = self.ports.allocate(at.interface, at.addr.local).map_err(|e| e.to_string())?;
        let port = p.port;
        self.pending.insert(Pair { interface: at.interface, port }, p);
        Ok(port)
    }

    fn allocate_at(&mut self, at: Binding, port: u16) -> Result<(), String> {
        let p = self.ports.allocate_at(at.interface, at.addr.local, port).map_err(|e| e.to_string())?;
        self.pending.insert(Pair { interface: at.interface, port }, p);
        Ok(())
    }

    fn release(&mut self, pair: Pair) {
        self.pending.remove(&pair);
        self.ports.release(pair.interface, pair.port);
    }

    fn load(&self) -> Load {
        let last = self.load.get();
        let now = Instant::now();
        let span = now.duration_since(last.at);
        if span < LOAD_SAMPLE {
            return last.load;
        }
        let (mut busy_ns, mut bytes_in) = (0u64, 0u64);
        for w in &self.workers {
            busy_ns += w.stats.busy_ns.load(Relaxed);
            bytes_in += w.stats.total.snapshot().bytes_in;
        }
        let secs = span.as_secs_f64();
        let workers = self.workers.len().max(1) as f64;
        let files = self.ports.free_files();
        let load = Load {
            busy: (busy_ns.saturating_sub(last.busy_ns) as f64 / 1e9 / secs / workers).clamp(0.0, 1.0),
            bytes_per_s: (bytes_in.saturating_sub(last.bytes_in) as f64 / secs) as u64,
            free_files: files,
        };
        self.load.set(LoadSample { at: now, busy_ns, bytes_in, load });
        load
    }

    fn worker_alive(&self, w: usize) -> bool {
        self.workers.get(w).is_some_and(WorkerHandle::alive)
    }

    fn prompt(&mut self, source: &PromptSource, rate_for: &dyn Fn(u32) -> u32) -> Result<Arc<Prompt>, String> {
        self.prompts.get(source, rate_for)
    }

    fn media_totals(&self) -> (LegSnapshot, Histogram) {
        let mut t = LegSnapshot::default();
        for w in &self.workers {
            t.add(&w.stats.total.snapshot());
        }
        let stats: Vec<_> = self.workers.iter().map(|w| w.stats.clone()).collect();
        (t, Histogram::of(&stats))
    }
}

impl<E: Engine + Clone + 'static> Plane for Relay<E>
where
    E::Keys: 'static,
{
    fn apply(&mut self, c: Command) {
        if let Some((worker, cmd)) = self.worker_cmd(c) {
            self.send(worker, cmd);
        }
    }

    fn deferred(&self, c: Command) -> Then {
        let Command::Reserve { worker, call, stream, party, key, ssrc, rtp, rtcp } = c else {
            // Only reservations wait for the store.
            tracing::error!("{c:?} cannot wait for the store");
            return Box::new(|| {});
        };
        let Some(w) = self.workers.get(worker).map(WorkerHandle::sender) else { return Box::new(|| {}) };
        Box::new(move || {
            w.send(Cmd::Reserve { call, stream, party, key, ssrc, rtp, rtcp });
        })
    }

    fn ask_states(&self) -> Vec<Receiver<Vec<worker::LegState>>> {
        self.workers
            .iter()
            .filter(|w| w.alive())
            .map(|w| {
                let (tx, rx) = std::sync::mpsc::channel();
                w.send(Cmd::Snapshot { reply: tx });
                rx
            })
            .collect()
    }

    fn workers(&self) -> Vec<(Arc<WorkerStats>, bool)> {
        self.workers.iter().map(|w| (w.stats.clone(), w.alive())).collect()
    }

    fn engine_stats(&self) -> Option<EngineStats> {
        self.engine.stats()
    }

    fn ports(&self) -> (usize, usize) {
        (self.ports.in_use(), self.ports.capacity())
    }

    fn files_elsewhere(&self) -> Arc<std::sync::atomic::AtomicUsize> {
        self.ports.elsewhere.clone()
    }

    fn set_fd_budget(&mut self, files: usize) {
        self.ports.fd_budget = Some(files);
    }
}

/// A worker's report in the table's terms.
pub fn leg_state(s: worker::LegState) -> LegState {
    LegState {
        call: s.call,
        stream: s.stream,
        party: s.party,
        rx: s.rx,
        rx_uses: s.rx_uses,
        tx: s.tx,
        tx_uses: s.tx_uses,
        wanted: s.wanted,
    }
}
