//! rtpengine's NG control protocol, as Kamailio's and OpenSIPS's `rtpengine`
//! modules speak it: a UDP datagram is `COOKIE SPACE BENCODED-DICTIONARY`,
//! the reply is the same cookie, a space and a bencoded dictionary.
//!
//! - [`bencode`]: the dynamic [`Value`], a bounded decoder and the encoder.
//! - [`split`], [`parse_request`]: datagram → cookie and typed [`Request`].
//! - [`reply`], [`ok`], [`error`]: replies; [`request`], [`parse_reply`]: the
//!   client side (tests, load generator).
//!
//! Untrusted input never panics: datagrams are at most [`MAX_DATAGRAM`]
//! bytes, bencode nesting at most [`bencode::MAX_DEPTH`], containers at most
//! [`bencode::MAX_ENTRIES`] entries, cookies at most [`MAX_COOKIE`] bytes,
//! text echoed back in errors is cut to 64 characters, and a request keeps
//! at most [`MAX_WARNINGS`] distinct warnings (the rest are counted).
//!
//! # Key and flag policy
//!
//! Keys, flags and option values are matched case-insensitively, with
//! space, `-` and `_` equivalent (`record call` = `record-call`,
//! `trust_address` = `Trust Address`), as rtpengine accepts those spellings.
//! Crypto suite names are case-insensitive. Keys are processed in sorted
//! order, so the result never depends on the order they were sent in; two
//! spellings of one key in one request are accepted when their values agree
//! (Kamailio 5.6 sends `delete delay` = 0 and `delete-delay` = "0"), an error
//! (`duplicate key`) otherwise. A list-valued key also
//! takes a string of comma-separated items (as rtpengine does); integer keys
//! take an integer or a decimal string.
//!
//! Statuses: **implemented** — parsed into a [`Request`] field; **silent** —
//! accepted, no effect, no warning; **ignored** — accepted, no effect, a
//! warning in [`Request::warnings`] (the daemon logs it and returns it in the
//! reply's `warning`) and, for a key, its name in [`Request::ignored_keys`]
//! (the daemon counts it); **error** — the request is refused with the given
//! `error-reason`. *Implemented* means parsed: whether the daemon acts on a
//! field is the daemon's business, and where it does not, it adds a warning
//! of its own (docs/OPERATIONS.md lists them).
//!
//! ## Commands (`command`)
//!
//! | command | status | required keys |
//! |---|---|---|
//! | `ping` | implemented | — |
//! | `offer` | implemented | `call-id`, `from-tag`, `sdp` |
//! | `answer` | implemented | `call-id`, `from-tag`, `to-tag`, `sdp` |
//! | `delete` | implemented | `call-id` |
//! | `query` | implemented | `call-id` |
//! | `list` | implemented | — (optional `limit`) |
//! | `statistics` | implemented | — |
//! | `start recording`, `stop recording`, `pause recording` | implemented | `call-id` |
//! | anything else (`block DTMF`, `play media`, `publish`, `subscribe request`, …) | error `Unrecognized command 'X'` | |
//!
//! A missing required key is `missing key 'call-id'` (etc.); a missing
//! `command` is `missing key 'command'`. A JSON body is refused.
//!
//! ## Top-level keys
//!
//! | key (and spellings) | status | field / notes |
//! |---|---|---|
//! | `command` | implemented | [`Request::command`] |
//! | `call-id`, `call id` | implemented | [`Request::call_id`] |
//! | `from-tag` | implemented | [`Request::from_tag`] |
//! | `to-tag` | implemented | [`Request::to_tag`] |
//! | `via-branch` | implemented | [`Request::via_branch`] |
//! | `sdp` | implemented | [`Request::sdp`] (UTF-8) |
//! | `transport-protocol`, `transport protocol` | implemented | [`Request::transport_protocol`]: `RTP/AVP`, `RTP/SAVP`, `RTP/AVPF`, `RTP/SAVPF`, `UDP/TLS/RTP/SAVP`, `UDP/TLS/RTP/SAVPF`; anything else (`accept`, …) is error `unsupported transport-protocol 'X'` |
//! | `replace` | implemented | [`Request::replace`] (see below); unknown item: error `unknown replace option 'X'` |
//! | `direction` | implemented | [`Request::direction`]: one or two interface names (one names the first side only); more is error `key 'direction' must be a list of one or two interface names` |
//! | `from-interface`, `to-interface` | implemented | one side of [`Request::direction`] |
//! | `ICE` | implemented | [`Request::ice`]: `remove`, `force`, `default`, `force-relay`, `optional`; else error `unknown ICE option 'X'` |
//! | `rtcp-mux` | implemented | [`Request::rtcp_mux`]: `offer`, `require`, `demux`, `accept`, `reject`; else error `unknown rtcp-mux option 'X'` |
//! | `SDES` | implemented | [`Request::sdes`] (see below); else error `unknown SDES option 'X'` / `unknown crypto suite 'X'` |
//! | `OSRTP` | implemented | [`Request::osrtp`]: `offer`, `offer-RFC`, `offer-legacy`, `accept-RFC`, `accept-legacy`, `accept`; else error `unknown OSRTP option 'X'` |
//! | `flags` | implemented | see *Flags* |
//! | `record call`, `record-call` | implemented | [`Request::record_call`]: `yes`/`on`, `no`/`off`, `discard` ([`RecordCall`]); anything else warns and is ignored, as rtpengine logs it |
//! | `metadata` | implemented | [`Request::metadata`] |
//! | `recording-file` (`recording-destination`, `recording-dest`, `output-destination`, `output-dest`, `output-file`) | implemented | [`Request::recording_file`] |
//! | `recording-path` (`recording-dir`, `recording-directory`, `recording-folder`, `output-path`, `output-dir`, `output-directory`, `output-folder`) | implemented | [`Request::recording_path`] |
//! | `recording-pattern`, `output-pattern` | implemented | [`Request::recording_pattern`] |
//! | `pause` | implemented | [`Request::pause`]: `yes`, `on` or `true` (as rtpengine, exactly); anything else is no pause |
//! | `received-from`, `received from` | implemented | [`Request::received_from`]: `["IP4"\|"IP6", address]` or just an address; checked |
//! | `media-address`, `media address` | implemented | [`Request::media_address`]: must be an IP address |
//! | `address family`, `address-family` | implemented | [`Request::address_family`]: `IP4` or `IP6` |
//! | `delete-delay`, `delete delay` | implemented | [`Request::delete_delay`] |
//! | `ptime`, `ptime-reverse` (`reverse ptime`) | implemented | [`Request::ptime`], [`Request::ptime_reverse`]: 1–1000 ms, else error |
//! | `label`, `from-label` | implemented | [`Request::label`] |
//! | `limit` | implemented | [`Request::limit`] (> 0) |
//! | `offset` | implemented (srtpgate extension) | [`Request::offset`] (≥ 0): where a `list` page starts |
//! | `codec` | implemented (collected) | [`Request::codec`]: `strip`, `offer`, `except`, `ignore`, `transcode`, `mask`, `accept`, `consume`, `set` collected for the daemon (which applies them and transcodes where needed); an unknown operation is warned (`unknown codec operation 'X' ignored`) |
//! | `DTLS` | implemented | [`Request::dtls`]: `off`/`no`/`disable(d)` (also [`Request::dtls_off`]), `passive`, `active`; else error |
//! | `DTLS-reverse` | implemented | [`Request::dtls_reverse`]: `passive`, `active` (`off`: none); else error |
//! | `supports` | implemented | `load limit` sets [`Request::supports_load_limit`]; others warned (`optional feature 'X' not supported`) |
//! | `rtpp-flags`, `rtpp_flags` | implemented | the flag string rtpengine parses itself (Kamailio 5.8+): bare tokens are flags, `key=value` / `key=[a b]` / `key=[k=v …]` are keys as above; as in rtpengine, `direction=X` and a bare `internal`/`external` name one side each (the first `from-interface`, the second `to-interface`, a third is warned) |
//! | `sip-message-type`, `SIP code`, `sip-response-code`, `instance` | silent | informational |
//! | `file`, `blob`, `blob64`, `db-id`, `repeat-times`, `repeat-duration`, `start-pos`, `code`/`digit`, `duration`, `volume`, `pause` (an integer), `address`, `DTMF-security` | collected | [`Request::media`] ([`MediaKeys`]): the media-control commands' keys, checked by the call table (`blob64` is decoded here; `blob` wins over it) |
//! | `alias-key`, `audio player`, `BUNDLE`, `delay-buffer`, `drop-traffic`, `DTLS-fingerprint`, `DTMF-delay`, `DTMF-log-dest`, `DTMF-security-trigger(-end)`, `endpoint-learning`, `extmap`, `frequency`/`frequencies`, `generate RTCP`, `ICE-lite`, `interface`, `inbound-peer`/`outbound-peer`/`peer`, `media`, `media echo`, `moh`, `recording-media-slot(s)…`, `passthrough`, `repacketize`, `sdp-attr`, `sdp-media-remove`, `T.38`, `T38-version`, `template`, `to-call-id`, `TOS`, `trigger`, `trigger-end`, `trigger-end-time`, `trigger-end-digits`, `vsc-…`, `xmlrpc-callback` | ignored | warning `key 'X' ignored: not supported by srtpgate`; [`Request::ignored_keys`] has the key's normalized name |
//! | any other key | ignored | warning `unknown key 'X' ignored` (forward compatibility); [`Request::ignored_keys`] has `other` |
//!
//! ## `replace` items (also `replace-X` flags)
//!
//! `origin`, `origin-full`, `session-connection`, `SDP-version`, `username`,
//! `session-name`, `zero-address`, `force-increment-sdp-ver`: implemented
//! ([`Replace`]). Anything else: error (`unknown replace option 'X'`; as a
//! flag, `unknown flag 'replace-X'`).
//!
//! ## `SDES` items (also `SDES-X` flags)
//!
//! | item | [`Sdes`] |
//! |---|---|
//! | `off`, `no`, `disable`, `disabled` | `Off` |
//! | `no-SUITE` | `No` (canonical name; also accepts `F8_128_HMAC_SHA1_32`, which rtpengine knows and srtpgate does not implement) |
//! | `only-SUITE` | `Only` (must be a suite srtpgate implements) |
//! | `unencrypted_srtp`, `unencrypted_srtcp`, `unauthenticated_srtp` | `UnencryptedSrtp`, `UnencryptedSrtcp`, `UnauthenticatedSrtp` |
//! | `encrypted_srtp`, `encrypted_srtcp`, `authenticated_srtp` | `EncryptedSrtp`, `EncryptedSrtcp`, `AuthenticatedSrtp` |
//! | `lifetime`, `pad`, `static`, `nonew`, `prefer` (`priority`) | `Lifetime`, `Pad`, `Static`, `NonNew`, `Prefer` |
//! | `order:A;B;…`, `offerer_pref:A;B;…` | `Order`, `OffererPref` (unknown suites dropped with a warning) |
//!
//! Anything else: error `unknown SDES option 'X'` (as a flag, `unknown flag
//! 'SDES-X'`); an unknown suite: error `unknown crypto suite 'X'`.
//!
//! ## Flags (the `flags` list)
//!
//! | flag (and spellings) | status | field / notes |
//! |---|---|---|
//! | `RTP/AVP`, `RTP/SAVP`, `RTP/AVPF`, `RTP/SAVPF`, `UDP/TLS/RTP/SAVP`, `UDP/TLS/RTP/SAVPF` | implemented | [`Request::transport_protocol`] |
//! | `WebRTC` | implemented | as rtpengine: `UDP/TLS/RTP/SAVPF`, `ICE=force`, `rtcp-mux-offer`, `rtcp-mux-require`, `generate-mid`, `SDES-off` |
//! | `trust address` | implemented | [`Flags::trust_address`] |
//! | `SIP source address` | implemented | [`Flags::sip_source_address`] |
//! | `symmetric`, `asymmetric` | implemented | [`Flags::symmetric`], [`Flags::asymmetric`] |
//! | `strict source`, `media handover` | implemented | [`Flags::strict_source`], [`Flags::media_handover`] |
//! | `port latching`, `no port latching` | implemented | [`Flags::port_latching`], [`Flags::no_port_latching`] |
//! | `loop protect` | implemented | [`Flags::loop_protect`] |
//! | `no rtcp attribute`, `full rtcp attribute` | implemented | [`Flags::no_rtcp_attribute`], [`Flags::full_rtcp_attribute`] |
//! | `generate mid`, `strip extmap` | implemented | [`Flags::generate_mid`], [`Flags::strip_extmap`] |
//! | `fragment`, `reset`, `original sendrecv` | implemented | [`Flags::fragment`], [`Flags::reset`], [`Flags::original_sendrecv`] |
//! | `directional`, `unidirectional` | implemented | [`Flags::directional`], [`Flags::unidirectional`] |
//! | `fatal`, `to-tag` (delete) | implemented | [`Flags::fatal`], [`Flags::to_tag`] |
//! | `debug`, `debugging` | implemented | [`Flags::debug`] |
//! | `NAT wait`, `pierce NAT` | implemented | [`Flags::nat_wait`], [`Flags::pierce_nat`] |
//! | `reject ICE`, `ICE reject`, `trickle ICE` | implemented | [`Flags::reject_ice`], [`Flags::trickle_ice`] |
//! | `single codec` | implemented | [`Flags::single_codec`] |
//! | `always transcode`, `always transcoding`, `force transcoding` | implemented | [`Flags::always_transcode`] |
//! | `all`, `provisional`, `new branch` | implemented | [`Flags::all`], [`Flags::provisional`], [`Flags::new_branch`] |
//! | `block egress`, `inject DTMF` | implemented | [`Flags::block_egress`], [`Flags::inject_dtmf`] (what srtpgate does anyway: a prompt replaces the other party's media, `play DTMF` needs no preparation) |
//! | `record call` | implemented | [`Request::record_call`] = [`RecordCall::Yes`] |
//! | `discard recording` | implemented | [`Request::record_call`] = [`RecordCall::Discard`] (unless `record call` is there too) |
//! | `pause` | implemented | [`Request::pause`] |
//! | `pad crypto` | implemented | [`Sdes::Pad`] |
//! | `SDES-X` | implemented | see *SDES items* |
//! | `OSRTP-X` | implemented | [`Request::osrtp`]; unknown X: error `unknown flag` |
//! | `replace-X` | implemented | [`Request::replace`]; unknown X: error `unknown flag` |
//! | `rtcp-mux-X` | implemented | [`Request::rtcp_mux`]; unknown X: error `unknown flag` |
//! | `codec-strip-X`, `codec-offer-X`, `codec-except-X`, `codec-ignore-X`, `codec-transcode-X`, `transcode-X`, `codec-mask-X`, `codec-accept-X`, `codec-consume-X`, `codec-set-X` | implemented (collected) | [`Request::codec`], as the `codec` key's operations |
//! | `BUNDLE-X` (`accept`, `offer`, `reject`; `require` taken as `offer`, `strict` as `accept`, with a warning) | implemented | [`Request::bundle`]; other X: error `unknown flag` |
//! | `endpoint-learning-X` (`off`, `immediate`, `delayed`, `heuristic`) | ignored | warning; other X: error `unknown flag` |
//! | `from-tags-X`, `sdp-attr-add-X`, `sdp-attr-remove-X`, `sdp-attr-substitute-X`, `T38-X`, `T.38-X` | ignored | warning |
//! | `allow asymmetric codecs`, `allow no codec media` (`allow empty codec media`), `allow transcoding`, `asymmetric codecs`, `symmetric codecs`, `reorder codecs`, `audio player`/`player`, `no player`/`no audio player`, `bidirectional`, `block DTMF`, `block short` (`block shorts`, `block short packets`), `detect DTMF`, `early media`, `egress`, `exclude recording`, `skip recording db` (`…database`), `generate RTCP`, `inactive`, `mirror RTCP`/`RTCP mirror`, `mix`/`mixed`, `passthrough`, `no passthrough`, `no tls id`, `no jitter buffer`, `no redis update`, `recording VSC`, `recording announcement`, `recrypt`, `static codec(s)`, `reuse codecs`/`no codec renegotiation` | ignored | warning `flag 'X' ignored: not supported by srtpgate` |
//! | anything else | error | `unknown flag 'X'` |

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod bencode;
mod request;

pub use bencode::{decode, BencodeError, Value};
pub use request::{
    error, ok, parse_reply, parse_request, reply, request, split, warning_text, Bundle, CodecOps, Command, Dtls, Flags,
    Ice, MediaKeys, NgError, Osrtp, RecordCall, Replace, Request, RtcpMux, Sdes, TransportProtocol, MAX_COOKIE,
    MAX_WARNINGS, MAX_WARNING_TEXT,
};

/// The largest datagram accepted (and the largest bencode body decoded).
pub const MAX_DATAGRAM: usize = 65_536;

/// The largest reply datagram: the most a UDP datagram can carry over IPv4
/// (65 535 − 20 − 8). A reply that would be larger is trimmed or replaced by
/// an error reply, never dropped.
pub const MAX_REPLY: usize = 65_507;
