//! Sans-IO SRTP and SRTCP (RFC 3711, RFC 6188, RFC 7714) with a batch-first
//! crypto engine interface.
//!
//! The protocol state lives in a [`Context`]; the cryptography is done by an
//! [`Engine`] on batches of [`Job`]s: [`CpuEngine`] (production, AES-NI and
//! SHA-NI through RustCrypto) or [`PortableEngine`] (table AES, the model of
//! the GPU kernels). No sockets, threads or clocks; no allocation per packet.
// `unsafe` appears in the contract of `Engine::register_memory` and in the
// SIMD kernels of `sha1x` (intrinsics only, each behind a CPU feature check),
// and in `prefetch` (a hint that cannot fault).
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod context;
pub mod cpu;
pub mod engine;
pub mod error;
mod gcm;
pub mod header;
pub mod index;
pub mod kdf;
pub mod keys;
pub mod portable;
pub mod prefetch;
pub mod replay;
pub mod sha1mac;
pub mod sha1x;
pub mod suite;

pub use context::{
    Context, Kind, Policy, Prepared, StreamState, MAX_PACKET_LEN, MAX_RTCP_TRAILER_LEN, MAX_TRAILER_LEN,
};
pub use cpu::CpuEngine;
pub use engine::{Engine, EngineStats, Job, Lane, Op, Outcome, Ticket};
pub use error::{Error, HeaderError};
pub use kdf::SessionKeys;
pub use keys::MasterKey;
pub use portable::PortableEngine;
pub use sha1x::MacPath;
pub use suite::Suite;
