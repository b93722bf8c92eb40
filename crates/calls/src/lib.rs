//! The call table, without I/O: no sockets, threads, clocks or runtime, so
//! that it is tested and fuzzed without a relay.
//!
//! The daemon (`srtpgate serve`) reads NG requests and hands them to
//! [`Table::handle`] with the time and its [`Resources`] (port pairs,
//! workers); the reply comes back at once, and every effect on the media
//! path waits in the table as a [`Command`] for the daemon to drain
//! ([`Table::poll_command`]) and carry out, as quinn-proto's connection
//! returns transmits. Writes for the Redis store wait likewise
//! ([`Table::poll_persist`]).
//!
//! An `offer` or `answer` runs in named steps, each in the file that holds
//! it: decide (a plan per m-line), bind ports, edit the SDP, commit.
//!
//! | file | holds |
//! |---|---|
//! | `table.rs` | [`Table`]: requests routed and counted, calls admitted, placed, ended, expired |
//! | `call.rs` | what a call keeps: parties, streams, legs (the vocabulary) |
//! | `offer.rs`, `answer.rs` | offer and answer as decide, edit, commit |
//! | `negotiate.rs` | codecs under rtpengine's codec options |
//! | `transcoders.rs` | the two transcoders of a transcoded stream |
//! | `keys.rs` | SDES keys: suites, fresh keys, policies |
//! | `edit.rs` | the line-preserving SDP edits |
//! | `transport.rs` | WebRTC legs' ICE, DTLS and BUNDLE attributes in SDP |
//! | `web_leg.rs`, `web.rs` | an ICE-lite/DTLS-SRTP leg's association, and its effects |
//! | `report.rs` | `query`, `list`, `statistics` |
//! | `quality.rs` | call quality: RTCP into each call's book, the relay's own samples, the `SSRC` reply, the totals |
//! | `recording.rs` | call recording: which calls record, paused or not, their files' names; the writer's events |
//! | `subscribe.rs` | media forking: subscribers, their forks and offer SDP |
//! | `keep.rs`, `record.rs` | calls kept for a restart: records, reservations |
//! | `resume.rs` | kept calls put back at start or by a standby |
//! | `ignored.rs` | warnings for what a request asks that the relay does not do |
//! | `sim.rs` | a host without sockets or workers, for tests and fuzzing |
//! | `command.rs` | [`Command`], [`LegSetup`], [`Keying`], [`Resources`] |

#![forbid(unsafe_code)]

mod answer;
pub mod call;
pub mod command;
mod edit;
mod ignored;
pub mod interface;
pub mod keep;
mod keys;
pub mod media;
pub mod negotiate;
mod offer;
pub mod play;
pub mod quality;
pub mod record;
pub mod recording;
pub mod report;
mod resume;
pub mod sim;
pub mod subscribe;
pub mod table;
mod transcoders;
pub mod transport;
pub mod web;
pub mod web_leg;

pub use call::{Call, CallKey, Leg, Stream};
pub use command::{Command, Keying, LegSetup, Load, PromptSource, Resources, Resume};
pub use keep::{LegState, Persist};
pub use quality::{CallQuality, HomerRecord, QualityTotals};
pub use recording::{RecorderEvent, RecordingSettings};
pub use report::LIST_PAGE;
pub use table::{Limits, LoadLimit, Now, Refusal, Settings, Table, Totals};
pub use web::Signal;
