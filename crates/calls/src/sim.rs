//! A host for the table without sockets or workers, for tests and the
//! fuzz target: it hands out port numbers, carries out commands on a model
//! of the workers (which streams and legs each holds, with which keys, which
//! calls they copy to the recorder) and of the recorder (which recordings
//! are open), and checks on the way that every command and every recorder
//! step makes sense.

use crate::call::CallKey;
use crate::command::ForkKey;
use crate::command::{Command, Keying, Load, PromptSource, Resources};
use crate::interface::{Binding, Pair};
use crate::recording::RecorderEvent;
use srtpgate_codec::prompt::{Prompt, PromptLimits};
use srtpgate_stats::{Histogram, LegSnapshot, DELAY_BOUNDS_US};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// What a modelled worker holds of one leg.
#[derive(Default, Debug)]
pub struct LegModel {
    /// The master key and salt of its receiving and sending contexts (the
    /// latest made), where it has them.
    pub rx: Option<Vec<u8>>,
    /// See `rx`.
    pub tx: Option<Vec<u8>>,
    /// It transcodes what it receives.
    pub transcodes: bool,
    /// Waits for DTLS keys.
    pub keys_pending: bool,
}

/// A fork as its worker holds it.
#[derive(Clone, Debug)]
pub struct ForkModel {
    pub worker: usize,
    pub call: CallKey,
    pub pair: Pair,
    /// Once configured, the key material it sends with (empty: plain RTP).
    pub sends: Option<Vec<u8>>,
}

/// Port numbers, workers and the model of what they hold.
#[derive(Default)]
pub struct SimHost {
    /// Workers; a worker in `dead` does not run.
    pub workers: usize,
    /// Workers that stopped.
    pub dead: BTreeSet<usize>,
    /// Port pairs bound and not released (per interface).
    pub bound: BTreeSet<Pair>,
    /// Pairs handed to a worker (bound ones only).
    pub handed: BTreeSet<Pair>,
    /// The lowest port; ports run up to `last`, the lowest free first.
    pub first: u16,
    /// The highest port.
    pub last: u16,
    /// Streams each worker holds: (worker, call, stream) → ports.
    pub streams: BTreeMap<(usize, CallKey, usize), [Pair; 2]>,
    /// Legs: (call, stream, party).
    pub legs: BTreeMap<(CallKey, usize, usize), LegModel>,
    /// Commands that did not make sense, described.
    pub faults: Vec<String>,
    /// What [`Resources::load`] reports (set by a test).
    pub load: Load,
    /// Commands carried out.
    pub applied: u64,
    /// Calls whose packets the workers copy to the recorder, with the
    /// worker told.
    pub tapped: BTreeMap<CallKey, usize>,
    /// Recordings the recorder has open: whether each writes (not paused).
    pub recordings: BTreeMap<CallKey, bool>,
    /// Forks the workers hold.
    pub forks: BTreeMap<ForkKey, ForkModel>,
}

impl SimHost {
    /// `workers` workers and the even ports `first..=last`.
    pub fn new(workers: usize, first: u16, last: u16) -> SimHost {
        SimHost { workers, first, last, ..SimHost::default() }
    }

    fn find(&self, call: CallKey, stream: usize) -> Option<usize> {
        self.streams.keys().find(|k| k.1 == call && k.2 == stream).map(|k| k.0)
    }

    /// Carries out one command on the model.
    pub fn apply(&mut self, c: Command) {
        self.applied += 1;
        match c {
            Command::AddStream { worker, call, stream, ports, .. } => {
                for p in ports {
                    if !self.bound.contains(&p) || !self.handed.insert(p) {
                        self.faults.push(format!("stream {call}/{stream} takes pair {p:?}, not bound or taken"));
                    }
                }
                if self.find(call, stream).is_some() {
                    self.faults.push(format!("stream {call}/{stream} added twice"));
                }
                self.streams.insert((worker, call, stream), ports);
            }
            Command::Configure { worker, call, stream, party, setup } => {
                if self.find(call, stream) != Some(worker) {
                    self.faults.push(format!("configure {call}/{stream} on worker {worker}, which does not hold it"));
                }
                let leg = self.legs.entry((call, stream, party)).or_default();
                leg.keys_pending = setup.keys_pending;
                if let Some(k) = setup.rx {
                    leg.rx = k.as_ref().map(material);
                }
                if let Some(k) = setup.tx {
                    leg.tx = k.as_ref().map(material);
                }
                if let Some(t) = setup.transcode {
                    leg.transcodes = t.is_some();
                }
            }
            Command::Keys { worker, call, stream, party, rx, tx, .. } => {
                if self.find(call, stream) != Some(worker) {
                    self.faults.push(format!("keys for {call}/{stream} on worker {worker}, which does not hold it"));
                }
                let leg = self.legs.entry((call, stream, party)).or_default();
                leg.rx = Some(material(&rx));
                leg.tx = Some(material(&tx));
                leg.keys_pending = false;
            }
            Command::RemoveStream { worker, call, stream } => self.drop_stream(worker, call, stream),
            Command::RemoveCall { worker, call } => {
                let gone: Vec<_> = self.streams.keys().filter(|k| k.0 == worker && k.1 == call).copied().collect();
                for (w, c, s) in gone {
                    self.drop_stream(w, c, s);
                }
                if self.streams.keys().any(|k| k.1 == call) {
                    self.faults.push(format!("call {call} removed from worker {worker}, but another holds it"));
                }
                self.tapped.remove(&call);
                let forks: Vec<_> = self.forks.iter().filter(|f| f.1.call == call).map(|(k, f)| (*k, f.pair)).collect();
                for (k, port) in forks {
                    self.forks.remove(&k);
                    self.handed.remove(&port);
                }
            }
            Command::MoveCall { worker, call, to } => {
                let moving: Vec<_> = self.streams.keys().filter(|k| k.0 == worker && k.1 == call).copied().collect();
                for k in moving {
                    if let Some(p) = self.streams.remove(&k) {
                        self.streams.insert((to, k.1, k.2), p);
                    }
                }
                if let Some(w) = self.tapped.get_mut(&call) {
                    *w = to;
                }
                for f in self.forks.values_mut().filter(|f| f.call == call) {
                    f.worker = to;
                }
            }
            Command::Record { worker, call, on } => {
                if self.streams.keys().any(|k| k.1 == call && k.0 != worker) {
                    self.faults.push(format!("record {call} on worker {worker}, but another holds it"));
                }
                if on {
                    self.tapped.insert(call, worker);
                } else {
                    self.tapped.remove(&call);
                }
            }
            Command::AddFork { worker, call, stream, fork, port, .. } => {
                if self.find(call, stream) != Some(worker) {
                    self.faults
                        .push(format!("fork #{fork} of {call}/{stream} on worker {worker}, which does not hold it"));
                }
                if !self.bound.contains(&port) || !self.handed.insert(port) {
                    self.faults.push(format!("fork #{fork} takes pair {port:?}, not bound or taken"));
                }
                if self.forks.insert(fork, ForkModel { worker, call, pair: port, sends: None }).is_some() {
                    self.faults.push(format!("fork #{fork} added twice"));
                }
            }
            Command::ConfigureFork { worker, call, fork, setup } => match self.forks.get_mut(&fork) {
                Some(f) if (f.worker, f.call) == (worker, call) => {
                    f.sends = Some(setup.tx.as_ref().map(material).unwrap_or_default())
                }
                _ => self.faults.push(format!("fork #{fork} of {call} configured on worker {worker}, which lacks it")),
            },
            Command::RemoveFork { worker, call, fork } => match self.forks.remove(&fork) {
                Some(f) if (f.worker, f.call) == (worker, call) => {
                    self.handed.remove(&f.pair);
                }
                _ => self.faults.push(format!("fork #{fork} of {call} removed from worker {worker}, which lacks it")),
            },
            Command::Play { worker, call, stream, .. } | Command::StopPlay { worker, call, stream, .. } => {
                if self.find(call, stream) != Some(worker) {
                    self.faults.push(format!("play on {call}/{stream} on worker {worker}, which does not hold it"));
                }
            }
            Command::Latch { .. } | Command::Send { .. } | Command::Reserve { .. } => {}
        }
    }

    /// Carries out one recorder step on the model.
    pub fn record(&mut self, e: RecorderEvent) {
        match e {
            RecorderEvent::Start { call, base, .. } => {
                if self.recordings.insert(call, true).is_some() {
                    self.faults.push(format!("recording of {call} started twice"));
                }
                if base.components().any(|c| matches!(c, std::path::Component::ParentDir)) {
                    self.faults.push(format!("recording of {call} goes to {}", base.display()));
                }
            }
            RecorderEvent::Pause { call, .. } | RecorderEvent::Resume { call, .. } => {
                let on = matches!(e, RecorderEvent::Resume { .. });
                match self.recordings.get_mut(&call) {
                    Some(r) if *r != on => *r = on,
                    Some(_) => self.faults.push(format!("recording of {call} paused or resumed twice")),
                    None => self.faults.push(format!("recording of {call} paused or resumed, not started")),
                }
            }
            RecorderEvent::Update { call, .. } => {
                if !self.recordings.contains_key(&call) {
                    self.faults.push(format!("recording of {call} updated, not started"));
                }
            }
            RecorderEvent::Stop { call, .. } => {
                if self.recordings.remove(&call).is_none() {
                    self.faults.push(format!("recording of {call} stopped, not started"));
                }
            }
        }
    }

    fn drop_stream(&mut self, worker: usize, call: CallKey, stream: usize) {
        if let Some(ports) = self.streams.remove(&(worker, call, stream)) {
            for p in ports {
                self.handed.remove(&p);
            }
        }
        self.legs.retain(|k, _| (k.0, k.1) != (call, stream));
    }

    /// Carries out every command the table queued.
    pub fn drain(&mut self, t: &mut crate::Table) {
        while let Some(c) = t.poll_command() {
            self.apply(c);
        }
        while let Some(e) = t.poll_recorder() {
            self.record(e);
        }
    }
}

/// A keying's master keys and salts, to compare keys between legs.
fn material(k: &Keying) -> Vec<u8> {
    k.policy.keys.iter().flat_map(|m| m.key().iter().chain(m.salt()).copied().collect::<Vec<u8>>()).collect()
}

impl Resources for SimHost {
    fn allocate(&mut self, at: Binding) -> Result<u16, String> {
        let pair = |port| Pair { interface: at.interface, port };
        let p =
            (self.first..=self.last).step_by(2).find(|&p| !self.bound.contains(&pair(p))).ok_or("no free port pair")?;
        self.bound.insert(pair(p));
        Ok(p)
    }

    fn allocate_at(&mut self, at: Binding, port: u16) -> Result<(), String> {
        if !self.bound.insert(Pair { interface: at.interface, port }) {
            return Err(format!("port {port} is in use on interface {}", at.interface));
        }
        Ok(())
    }

    fn release(&mut self, pair: Pair) {
        if !self.bound.remove(&pair) {
            self.faults.push(format!("pair {pair:?} released but not bound"));
        }
        self.handed.remove(&pair);
    }

    fn load(&self) -> Load {
        self.load
    }

    fn worker_alive(&self, w: usize) -> bool {
        w < self.workers && !self.dead.contains(&w)
    }

    fn media_totals(&self) -> (LegSnapshot, Histogram) {
        (LegSnapshot::default(), Histogram { buckets: vec![0; DELAY_BOUNDS_US.len() + 1] })
    }

    /// The bytes of a WAV file; the model has no media directory.
    fn prompt(&mut self, source: &PromptSource, rate_for: &dyn Fn(u32) -> u32) -> Result<Arc<Prompt>, String> {
        match source {
            PromptSource::Blob(b) => {
                let rate = rate_for(srtpgate_codec::prompt::wav_rate(b).map_err(|e| e.to_string())?);
                Prompt::from_wav(b, rate, &PromptLimits::default()).map(Arc::new).map_err(|e| e.to_string())
            }
            PromptSource::File(_) => Err("no media directory".into()),
        }
    }
}
