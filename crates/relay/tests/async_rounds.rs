//! Asynchronous rounds: a worker whose engine has a lane (here the
//! deferred test engine, whose batches complete only after several polls,
//! so that the worker holds several rounds in flight) relays exactly what
//! the CPU engine relays, frame for frame, with the same counters on every
//! leg: replayed and forged packets dropped for the same reasons, SRTCP
//! and the rollover counter as before. The GPU tests run the same scenario
//! on the GPU engine. Once warm, the worker allocates nothing with rounds
//! in flight either.

mod common;

use srtp::CpuEngine;
use srtpgate_testkit::deferred::Deferred;
use std::sync::atomic::AtomicU64;

#[global_allocator]
static GLOBAL: srtpgate_testkit::CountingAllocator = srtpgate_testkit::CountingAllocator;
static ALLOCS: AtomicU64 = AtomicU64::new(0);

#[test]
fn rounds_in_flight_relay_what_the_cpu_engine_relays() {
    let cpu = common::rounds::run(CpuEngine::new(), "cpu");
    let drops: u64 = cpu.legs.iter().map(|l| l.4.iter().sum::<u64>()).sum();
    assert_eq!(drops, 2, "the replayed and the forged packet");
    // Every batch on the lane; then small batches at once, large ones
    // deferred (a hybrid's split, the order of commits still the rounds').
    // The deferred batches take long enough (polls of the worker's loop)
    // for the rounds behind them to fill the lane.
    for (polls, below, tag) in [(20_000, 0, "deferred"), (500, 12, "hybrid")] {
        let got = common::rounds::run(Deferred::new(CpuEngine::new(), polls, below), tag);
        assert_eq!(got.legs, cpu.legs, "{tag}: the same counters on every leg");
        assert_eq!(got.frames, cpu.frames, "{tag}: the same frames to every destination");
        eprintln!("{tag}: {} of {} batches held by the lane, {} waits", got.lane_batches, got.batches, got.lane_waits);
        assert!(got.lane_batches > 0, "{tag}: the lane held batches while the worker went on");
    }
    assert_eq!(cpu.lane_batches, 0, "the CPU engine has no lane");
    // Batches that complete only when the worker waits for them: the
    // rounds fill the lane (the scenario's bursts are more rounds than it
    // holds) before the first lands.
    let engine = Deferred::new(CpuEngine::new(), u32::MAX, 0);
    let full = common::rounds::run_counting(engine.clone(), "full", Some(&ALLOCS));
    assert_eq!(full.allocations, Some(0), "once warm, the worker's rounds in flight allocate nothing");
    assert_eq!((full.legs, full.frames), (cpu.legs, cpu.frames), "full: the same as the CPU engine");
    assert_eq!(engine.most_in_flight(), srtpgate_testkit::deferred::DEPTH, "several rounds in flight at once");
}
