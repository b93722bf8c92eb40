//! The streams a worker owns, by slot: the slot is in every socket's
//! backend token, so a received datagram finds its stream by index, and a
//! command finds it through the call's list of slots.

use super::stream::CallKey;
use super::stream::{Leg, Member, Stream};
use srtp::Engine;
use std::collections::HashMap;

pub(super) struct Streams<E: Engine> {
    /// Boxed: a stream is about 2 KB (it was tens of kilobytes when this
    /// was measured), and a vector of them inline moved all of them when it
    /// grew (tens of milliseconds at a few hundred calls, with every packet
    /// of the worker waiting); a box also keeps a stream where the round's
    /// prefetch announced it.
    slots: Vec<Option<Box<Stream<E>>>>,
    free: Vec<u32>,
    /// The slots of each call's streams. Commands find their stream through
    /// it: a scan of every slot costs a cache miss per stream (a stream is
    /// large), and at thousands of calls coming and going that scan held
    /// the packets of every other call for tens of milliseconds.
    by_call: HashMap<CallKey, Vec<u32>>,
}

impl<E: Engine> Streams<E> {
    pub fn new() -> Streams<E> {
        Streams { slots: Vec::new(), free: Vec::new(), by_call: HashMap::new() }
    }

    /// The stream in `slot`.
    pub fn get(&self, slot: u32) -> Option<&Stream<E>> {
        self.slots.get(slot as usize)?.as_deref()
    }

    /// The stream in `slot`, to change.
    pub fn get_mut(&mut self, slot: u32) -> Option<&mut Stream<E>> {
        self.slots.get_mut(slot as usize)?.as_deref_mut()
    }

    /// Every stream.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut Stream<E>> {
        self.slots.iter_mut().flatten().map(|s| &mut **s)
    }

    /// The slot of a call's stream.
    pub fn slot_of(&self, call: CallKey, stream: usize) -> Option<u32> {
        self.by_call.get(&call)?.iter().copied().find(|&slot| self.get(slot).is_some_and(|s| s.index == stream))
    }

    /// One leg of a call's stream, with the stream's slot.
    pub fn leg_mut(&mut self, call: CallKey, stream: usize, party: usize) -> Option<(u32, &mut Leg<E>)> {
        let slot = self.slot_of(call, stream)?;
        Some((slot, self.get_mut(slot)?.legs.get_mut(party)?))
    }

    /// A free slot (the vector grows when none is); it stays empty until
    /// [`Streams::put`] or [`Streams::give_back`].
    pub fn reserve(&mut self) -> u32 {
        match self.free.pop() {
            Some(s) => s,
            None => {
                self.slots.push(None);
                (self.slots.len() - 1) as u32
            }
        }
    }

    /// Returns a slot from [`Streams::reserve`] unused.
    pub fn give_back(&mut self, slot: u32) {
        self.free.push(slot);
    }

    /// Puts a stream into a slot from [`Streams::reserve`].
    pub fn put(&mut self, slot: u32, s: Stream<E>) {
        self.by_call.entry(s.call).or_default().push(slot);
        self.slots[slot as usize] = Some(Box::new(s));
    }

    /// Takes the stream out of `slot` and frees the slot.
    pub fn take(&mut self, slot: u32) -> Option<Stream<E>> {
        let taken = self.slots.get_mut(slot as usize)?.take()?;
        if let Some(slots) = self.by_call.get_mut(&taken.call) {
            slots.retain(|&x| x != slot);
            if slots.is_empty() {
                self.by_call.remove(&taken.call);
            }
        }
        self.free.push(slot);
        Some(*taken)
    }

    /// Takes every stream of a call out (their slots freed).
    pub fn take_call(&mut self, call: CallKey) -> impl Iterator<Item = (u32, Stream<E>)> + '_ {
        let slots = self.by_call.remove(&call).unwrap_or_default();
        slots.into_iter().filter_map(move |slot| {
            let s = self.slots.get_mut(slot as usize)?.take()?;
            self.free.push(slot);
            Some((slot, *s))
        })
    }

    /// Links the bundled legs of a call's streams to the stream whose
    /// transport they share (slots change when streams come, go or move).
    pub fn relink(&mut self, call: CallKey) {
        let mine: Vec<(usize, u32)> = self
            .by_call
            .get(&call)
            .into_iter()
            .flatten()
            .filter_map(|&slot| self.get(slot).map(|s| (s.index, slot)))
            .collect();
        // The SSRCs learnt so far stay with their stream: (leg, member).
        let mut learnt: Vec<(usize, Member)> = Vec::new();
        let mut links: Vec<(u32, usize, u32, u128)> = Vec::new();
        for &(_, slot) in &mine {
            let Some(s) = self.get_mut(slot) else { continue };
            for (party, d) in s.legs.iter_mut().enumerate() {
                learnt.extend(d.members.drain(..).map(|m| (party, m)));
                d.bundle_slot = d.bundle.and_then(|b| mine.iter().find(|(i, _)| *i == b).map(|&(_, ps)| ps));
                if let Some(owner) = d.bundle_slot {
                    links.push((owner, party, slot, d.pts));
                }
            }
        }
        for (owner, party, slot, pts) in links {
            let (ssrcs, seen) = learnt
                .iter()
                .find(|(s, m)| *s == party && m.slot == slot)
                .map(|(_, m)| (m.ssrcs, m.seen))
                .unwrap_or(([0; 4], 0));
            if let Some(o) = self.get_mut(owner) {
                o.legs[party].members.push(Member { slot, pts, ssrcs, seen });
            }
        }
    }
}
