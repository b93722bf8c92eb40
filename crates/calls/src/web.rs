//! The table's ICE/DTLS legs at run time: the STUN and DTLS datagrams the
//! workers hand over and the retransmission timer go to each leg's
//! [`WebLeg`]; what it decides (datagrams to send, the media peer, the keys
//! a handshake agreed) becomes commands for the call's worker.

use crate::call::CallKey;
use crate::command::{Command, Keying};
use crate::table::{Now, Table};
use crate::web_leg::Actions;
use srtpgate_webrtc::dtls::SrtpKeys;
use std::net::SocketAddr;

/// A STUN or DTLS datagram a worker handed over.
pub struct Signal<'a> {
    /// The call.
    pub call: CallKey,
    /// Its media stream.
    pub stream: usize,
    /// The party whose leg's port it came to.
    pub party: usize,
    /// Where it came from.
    pub from: SocketAddr,
    /// The datagram.
    pub data: &'a [u8],
}

impl Table {
    /// A STUN or DTLS datagram of an ICE/DTLS leg.
    pub fn signal(&mut self, sig: Signal<'_>, now: Now) {
        let Some(leg) = self.web.get_mut(&(sig.call, sig.stream, sig.party)) else {
            self.web_totals.signals_ignored += 1;
            return;
        };
        let act = leg.datagram(sig.from, sig.data, now.mono, &mut self.web_totals);
        self.apply_web(sig.call, sig.stream, sig.party, act);
    }

    /// Runs the DTLS retransmission timers that are due.
    pub fn web_tick(&mut self, now: Now) {
        let mut due = Vec::new();
        for (k, leg) in self.web.iter_mut().filter(|(_, l)| l.in_handshake()) {
            let act = leg.tick(now.mono, &mut self.web_totals);
            if !act.send.is_empty() || act.keys.is_some() || act.latch.is_some() {
                due.push((*k, act));
            }
        }
        for ((key, stream, party), act) in due {
            self.apply_web(key, stream, party, act);
        }
    }

    /// Carries out what an ICE/DTLS leg decided: datagrams out of the leg's
    /// port, its media peer, its SRTP keys.
    pub(crate) fn apply_web(&mut self, key: CallKey, stream: usize, party: usize, act: Actions) {
        let Some(call) = self.by_key.get(&key).and_then(|id| self.calls.get(id)) else { return };
        let worker = call.worker;
        for (to, data) in act.send {
            self.command(Command::Send { worker, call: key, stream, party, to, data });
        }
        let mut changed = false;
        if let Some(peer) = act.latch {
            self.command(Command::Latch { worker, call: key, stream, party, peer });
            changed = true;
        }
        if let Some(keys) = act.keys {
            match keyings(&keys) {
                Ok((rx, tx)) => {
                    let (tx_key, reserving) = (tx_tag(&keys), self.reserving());
                    self.command(Command::Keys { worker, call: key, stream, party, rx, tx, tx_key, reserving });
                    changed = true;
                    tracing::info!(
                        call_id = self.by_key.get(&key).map(String::as_str),
                        stream,
                        party,
                        "DTLS-SRTP keys agreed ({})",
                        keys.suite
                    );
                    if let Some(leg) = self.web.get_mut(&(key, stream, party)) {
                        leg.keyed = true;
                        leg.keys = Some(keys);
                    }
                    self.key_members(key, stream, party, true);
                }
                Err(e) => {
                    tracing::error!(
                        call_id = self.by_key.get(&key).map(String::as_str),
                        "DTLS-SRTP keys unusable: {e}"
                    );
                }
            }
        }
        if let Some(why) = act.failed {
            tracing::warn!(call_id = self.by_key.get(&key).map(String::as_str), stream, party, "DTLS: {why}");
        }
        // Kept calls keep the pair ICE chose and the keys the handshake
        // agreed, for a restart.
        if changed {
            if let Some(id) = self.by_key.get(&key).cloned() {
                self.keep_call(&id);
            }
        }
    }

    /// Gives the streams bundled into a keyed transport (stream `owner`'s
    /// leg of `party`) keys of their own from its handshake, once: a
    /// context is never made twice from one key for one stream (its index
    /// would start again, and the keystream with it). `fresh`: the
    /// transport's keys are new (a handshake just finished), so every member
    /// is keyed again.
    pub(crate) fn key_members(&mut self, key: CallKey, owner: usize, party: usize, fresh: bool) {
        let reserving = self.reserving();
        let Some(keys) = self.web.get(&(key, owner, party)).and_then(|l| l.keys.as_ref()) else { return };
        let tx_key = tx_tag(keys);
        let Some(call) = self.by_key.get(&key).and_then(|id| self.calls.get_mut(id)) else { return };
        let mut out = Vec::new();
        for (j, s) in call.streams.iter_mut().enumerate() {
            let Some(s) = s else { continue };
            let d = &mut s.legs[party];
            if j == owner || d.bundle != Some(owner) || (d.bundle_keyed && !fresh) {
                continue;
            }
            match keyings(keys) {
                Ok((rx, tx)) => {
                    out.push(Command::Keys {
                        worker: call.worker,
                        call: key,
                        stream: j,
                        party,
                        rx,
                        tx,
                        tx_key,
                        reserving,
                    });
                    d.bundle_keyed = true;
                }
                Err(e) => tracing::error!(call = key, "DTLS-SRTP keys unusable: {e}"),
            }
        }
        for c in out {
            self.command(c);
        }
    }
}

/// The tag the reservations of what the relay sends under `keys` carry.
fn tx_tag(keys: &SrtpKeys) -> u64 {
    crate::record::key_tag(&crate::record::dtls_key_id(keys, true))
}

/// The receiving and sending keyings of a handshake's keys, checked.
pub(crate) fn keyings(keys: &SrtpKeys) -> Result<(Box<Keying>, Box<Keying>), String> {
    let one = |p: Result<srtp::Policy, srtp::Error>| {
        let p = p.map_err(|e| e.to_string())?;
        p.check().map_err(|e| e.to_string())?;
        Ok::<_, String>(Box::new(Keying::new(p)))
    };
    Ok((one(keys.remote_policy())?, one(keys.local_policy())?))
}
