//! A thread's own lane to the device ([`srtp::Lane`]): a relay worker hands
//! a round's batch to the GPU and goes on with its next round while the
//! device runs it (asynchronous rounds).
//!
//! The lane is one of the engine's lanes, taken for the thread alone: its
//! stream, its descriptor and outcome buffers, its resident kernel. Their
//! [`RUNG`] parts hold as many batches in flight: in the launch mode each
//! with a completion event recorded on the stream after its kernel (and
//! its copies back); in the persistent mode the doorbell rings for them
//! all at once, batch `seq` in part `seq % RUNG`, and the resident kernel
//! takes them in order.
//!
//! Where a batch runs is decided per batch (the hybrid): on the CPU at
//! once when it is smaller than [`GpuEngine::lane_below`] (calibrated from
//! measured times: the size from which handing a batch over and taking its
//! results costs the thread less than running it), or when the lane has
//! no free part; else on the device. Packets outside registered memory,
//! and batches larger than a part, take the engine's blocking path.
//!
//! The round trip is not an input: measured by the thread, it includes the
//! time the thread was busy with its other rounds before it looked, and
//! under load that is most of it (the device's own part is the calibrated
//! one).

use super::*;
use srtp::Ticket;

/// A batch on the device.
struct InFlight {
    /// The ticket's number.
    seq: u64,
    /// The part of the lane's buffers it uses.
    part: usize,
    /// Its jobs.
    n: usize,
    /// Those the device runs (the others ran on the CPU when handed over).
    on_device: usize,
    /// The doorbell number (persistent mode).
    ring_seq: u32,
    /// When it was handed over, and when seen done.
    start: Instant,
    done: Option<Instant>,
}

/// A lane to the GPU of the calling thread's own.
pub struct GpuLane {
    engine: GpuEngine,
    index: usize,
    flights: [Option<InFlight>; RUNG],
    seq: u64,
}

impl GpuEngine {
    /// Takes a lane as the calling thread's own, while another lane stays
    /// for the threads that share (the blocking path); `None` when none is
    /// left. The lane is one of a GPU near the core the thread runs on,
    /// and of those the GPU with the fewest lanes taken: threads that take
    /// lanes one after the other spread over the GPUs.
    pub fn own_lane(&self) -> Option<GpuLane> {
        let mut free = Vec::new();
        let mut taken = vec![0usize; self.shared.gpus.len()];
        for (i, l) in self.lanes.iter().enumerate() {
            let g = l.lock().ok()?;
            if g.owned {
                taken[g.gpu] += 1;
            } else {
                free.push((i, g));
            }
        }
        if free.len() < 2 {
            return None;
        }
        let cpu = placement::current_cpu();
        // The first free lane stays for sharing; of equals, the last.
        let best = (1..free.len()).min_by_key(|&k| {
            let (i, g) = &free[k];
            (!self.homes.is_near(cpu, *i), taken[g.gpu], std::cmp::Reverse(k))
        })?;
        let (index, mut g) = free.swap_remove(best);
        g.owned = true;
        Some(GpuLane { engine: self.clone(), index, flights: Default::default(), seq: 0 })
    }

    /// Jobs a part of a lane's descriptor buffer holds (a [`GpuLane`]'s
    /// batch in flight).
    fn part(&self) -> usize {
        (self.cfg.chunk_packets / RUNG).max(1)
    }
}

impl GpuLane {
    /// Hands `jobs` to the device on `lane` (locked), in part `h` of its
    /// buffers: descriptors, then (launch) the copies, the kernel and the
    /// event, or (persistent) the doorbell. Jobs the device does not take
    /// run on the CPU here. Returns the doorbell number.
    fn hand_over(
        &self,
        lane: &mut Lane,
        regions: &[Region],
        jobs: &mut [Job<'_, GpuKeys>],
        h: usize,
    ) -> Result<u32, GpuError> {
        let e = &self.engine;
        let part = e.part();
        // SAFETY: part h of the wire buffer holds `part` ≥ jobs.len() descriptors,
        // of the outcome words as many words; the device uses neither (the
        // part's last batch is completed).
        let dst = unsafe { lane.wire.ptr.add(h * part * WIRE_BYTES) };
        // No verdict left from the part's last batch: a batch given up before
        // the device ran it reads as failed, never as done.
        unsafe { std::ptr::write_bytes(lane.outcomes.ptr.add(h * part * 4), 0, jobs.len() * 4) };
        let span = e.write_wire(lane.gpu, regions, jobs, dst);
        for job in jobs.iter_mut() {
            if device_len(job).is_none() {
                e.run_aside(job);
            }
        }
        match e.cfg.mode {
            Mode::Launch => {
                let wire = lane.wire.dev + (h * part * WIRE_BYTES) as u64;
                let outcomes = lane.outcomes.dev + (h * part * 4) as u64;
                let (rd, wd) = e.dma_in(lane, regions, span)?;
                e.launch_gather(lane, wire, outcomes, jobs.len(), rd, wd)?;
                e.dma_out(lane, regions, span)?;
                // SAFETY: the event and the stream are the lane's, live.
                unsafe { sys::cuEventRecord(lane.events[h], lane.stream.cu_stream()).result()? };
                Ok(0)
            }
            Mode::Persistent => e.ring_persistent(lane, jobs.len(), h * part),
        }
    }

    fn flight(&self, seq: u64) -> Option<usize> {
        self.flights.iter().position(|f| f.as_ref().is_some_and(|f| f.seq == seq))
    }
}

impl srtp::Lane<GpuKeys> for GpuLane {
    fn depth(&self) -> usize {
        RUNG
    }

    unsafe fn submit(&mut self, jobs: &mut [Job<'_, GpuKeys>]) -> Option<Ticket> {
        for job in jobs.iter_mut() {
            if !job.is_well_formed() {
                job.outcome = Outcome::AuthFailed;
            }
        }
        let e = &self.engine;
        let Ok(mut lane) = e.lanes[self.index].lock() else {
            e.run_cpu(jobs);
            return None;
        };
        let free = match e.cfg.mode {
            Mode::Launch => (0..RUNG).find(|&h| self.flights[h].is_none()),
            // The resident kernel finds batch seq in part seq % RUNG.
            Mode::Persistent => {
                let next = lane.ring.as_ref().map(|r| r.seq.wrapping_add(1));
                next.map(|q| q as usize % RUNG).filter(|&h| self.flights[h].is_none())
            }
        };
        let big = !jobs.is_empty() && jobs.len() >= e.lane_below();
        let (Some(h), true) = (free, big) else {
            drop(lane);
            e.run_cpu(jobs);
            return None;
        };
        let regions = match (e.gpu(&lane).ctx.bind_to_thread(), e.regions.read()) {
            (Ok(()), Ok(r)) => r,
            _ => {
                e.run_cpu(jobs);
                return None;
            }
        };
        let mut hint = 0usize;
        let in_place = !regions.is_empty()
            && jobs.len() <= e.part()
            && jobs.iter().all(|j| j.keys.slot.is_none() || find_region(&regions, j.buf, &mut hint).is_some());
        if !in_place {
            // Not where the device reaches it, or larger than a part: the
            // blocking path (a shared lane).
            drop((regions, lane));
            e.transform(jobs);
            return None;
        }
        let start = Instant::now();
        match self.hand_over(&mut lane, &regions, jobs, h) {
            Ok(ring_seq) => {
                self.seq += 1;
                let on_device = jobs.iter().filter(|j| device_len(j).is_some()).count();
                self.flights[h] =
                    Some(InFlight { seq: self.seq, part: h, n: jobs.len(), on_device, ring_seq, start, done: None });
                Some(Ticket { seq: self.seq, jobs: jobs.len() })
            }
            Err(err) => {
                // Nothing may be left running on the packets before the CPU
                // takes them.
                let _ = lane.stream.synchronize();
                eprintln!("srtp-cuda: {err}; this batch ran on the CPU");
                e.run_cpu(jobs);
                None
            }
        }
    }

    fn is_done(&mut self, ticket: &Ticket) -> bool {
        let Some(i) = self.flight(ticket.seq) else { return false };
        // Borrowed, not cloned: this runs at every poll of the worker's loop.
        let GpuLane { engine: e, index, flights, .. } = self;
        let Some(f) = flights[i].as_mut() else { return false };
        if f.done.is_some() {
            return true;
        }
        let Ok(mut lane) = e.lanes[*index].lock() else { return true };
        // An error says done: `complete` reports it.
        let done = poll(e, &mut lane, f, false).unwrap_or(true);
        if done {
            f.done = Some(Instant::now());
        }
        done
    }

    fn complete(&mut self, ticket: Ticket, outcomes: &mut [Outcome]) -> Result<(), String> {
        let Some(i) = self.flight(ticket.seq) else { return Err(format!("no GPU batch {} in flight", ticket.seq)) };
        let e = &self.engine;
        // A lock poisoned by a panic elsewhere still guards a live lane.
        let mut lane = e.lanes[self.index].lock().unwrap_or_else(|p| p.into_inner());
        let f = self.flights[i].take().expect("in flight");
        let waited = if f.done.is_some() {
            Ok(true)
        } else {
            e.gpu(&lane).ctx.bind_to_thread().map_err(GpuError::from).and_then(|()| poll(e, &mut lane, &f, true))
        };
        if let Err(err) = waited {
            // The batch is given up: nothing may run on its packets once the
            // worker has them back.
            e.abandon(&mut lane);
            return Err(err.to_string());
        }
        let ns = f.done.unwrap_or_else(Instant::now).duration_since(f.start).as_nanos() as u64;
        // SAFETY: part f.part of the outcome words, written by the finished kernel.
        let src = unsafe { lane.outcomes.ptr.add(f.part * e.part() * 4) };
        for (k, o) in outcomes.iter_mut().take(f.n).enumerate() {
            if *o != Outcome::Pending {
                continue;
            }
            // SAFETY: src holds an outcome word per job of the batch.
            let word = u32::from_le(unsafe { std::ptr::read_unaligned(src.add(4 * k) as *const u32) });
            *o = if word == layout::OUTCOME_DONE { Outcome::Done } else { Outcome::AuthFailed };
        }
        let gpu = lane.gpu;
        drop(lane);
        e.count_gpu_batch(ns, f.on_device, gpu);
        Ok(())
    }
}

/// Whether the batch in flight `f` on `lane` (locked) is done, waiting for
/// it if `wait`.
fn poll(e: &GpuEngine, lane: &mut Lane, f: &InFlight, wait: bool) -> Result<bool, GpuError> {
    match e.cfg.mode {
        Mode::Launch => {
            let ev = lane.events[f.part];
            if wait {
                // SAFETY: the lane's live event.
                unsafe { sys::cuEventSynchronize(ev).result()? };
                return Ok(true);
            }
            // SAFETY: as above.
            match unsafe { sys::cuEventQuery(ev) } {
                sys::CUresult::CUDA_SUCCESS => Ok(true),
                sys::CUresult::CUDA_ERROR_NOT_READY => Ok(false),
                err => Err(result::DriverError(err).into()),
            }
        }
        Mode::Persistent => e.wait_persistent(lane, f.ring_seq, wait),
    }
}

impl Drop for GpuLane {
    /// Batches still in flight finish before the lane is given back.
    fn drop(&mut self) {
        let e = &self.engine;
        let Ok(mut lane) = e.lanes[self.index].lock() else { return };
        let _ = e.gpu(&lane).ctx.bind_to_thread();
        for f in self.flights.iter_mut().filter_map(Option::take) {
            let _ = poll(e, &mut lane, &f, true);
        }
        // Not the stream: in the persistent mode its resident kernel runs
        // on until idle, and waiting for it took a start 10 s.
        lane.owned = false;
    }
}
