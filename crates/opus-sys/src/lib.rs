//! libopus 1.6.1, built once from the sources in `opus/` (BSD-3-Clause,
//! `opus/COPYING`), for everything in srtpgate that uses it:
//!
//! - [`ffi`]: libopus's public API, which the Opus plugin codes with (with
//!   libopus's deep packet loss concealment and LACE/NoLACE built in);
//! - [`plc`]: the same library's neural packet loss concealment, reached
//!   through the C shim `shim.c` (its entry points are private to libopus),
//!   for 16 kHz speech that Opus did not decode (the spandsp plugin's G.722).
//!
//! One build means one version and one copy of the model weights: the two
//! uses cannot drift apart. `build.rs` says how it is configured.

pub mod ffi;
pub mod plc;
