//! What the table reports over NG: a call's `query` (also the `delete`
//! reply), `list` pages and `statistics`, in rtpengine's shapes where it
//! has them; and the read-only view of the calls the management page
//! draws.

use crate::call::{Call, CallKey};
use crate::command::Resources;
use crate::edit::REPLY_ROOM;
use crate::table::{unix, Now, Refusal, Table};
use srtpgate_ng::{Request, Value};
use srtpgate_stats::LegSnapshot;

/// `list` pages hold this many Call-IDs unless `limit` says otherwise.
pub const LIST_PAGE: usize = 32;

impl Table {
    pub(crate) fn query(&mut self, req: &Request, now: Now) -> Result<Value, Refusal> {
        let call_id = req.call_id.clone().ok_or("missing key 'call-id'")?;
        self.call_report(&call_id, now).ok_or_else(|| format!("Unknown call-id '{call_id}'"))
    }

    /// The `query` reply of a call (also the `delete` reply): per tag, its
    /// media with their streams (RTP, then RTCP, as rtpengine lists them),
    /// ports, endpoints, SSRCs and counters; per SSRC its quality; and
    /// totals.
    pub(crate) fn call_report(&self, call_id: &str, now: Now) -> Option<Value> {
        let call = self.calls.get(call_id)?;
        let mut tags = Value::dict();
        let mut total_rtp = LegSnapshot::default();
        let (mut rtcp_packets, mut rtcp_bytes) = (0, 0);
        for party in 0..2 {
            let Some(tag) = &call.tags[party] else { continue };
            let mut medias = Vec::new();
            for (i, s) in call.streams.iter().enumerate() {
                let Some(s) = s else { continue };
                let d = &s.legs[party];
                let mut st = d.stats.snapshot();
                let rtcp_in = d.stats.rtcp_in.load(std::sync::atomic::Ordering::Relaxed);
                let rtcp_bytes_in = d.stats.rtcp_bytes_in.load(std::sync::atomic::Ordering::Relaxed);
                st.packets_in = st.packets_in.saturating_sub(rtcp_in);
                st.bytes_in = st.bytes_in.saturating_sub(rtcp_bytes_in);
                total_rtp.add(&st);
                rtcp_packets += rtcp_in;
                rtcp_bytes += rtcp_bytes_in;
                let endpoint = |peer: Option<std::net::SocketAddr>| match peer {
                    Some(a) => Value::dict()
                        .with("family", if a.is_ipv6() { "IPv6" } else { "IPv4" })
                        .with("address", a.ip().to_string())
                        .with("port", a.port() as u64),
                    None => Value::dict(),
                };
                let (peer_rtp, peer_rtcp) = d.peer.unwrap_or((None, None));
                let ssrc = d.stats.rtp_source().map(|(ssrc, _)| ssrc);
                let mut drops = Value::dict();
                for why in srtpgate_stats::Drop::ALL {
                    drops.insert(why.name(), st.drops[why as usize]);
                }
                let family = |ip: std::net::IpAddr| if ip.is_ipv6() { "IPv6" } else { "IPv4" };
                let (local, advertised) = (d.at.addr.local, d.at.addr.advertised);
                let rtcp_port = if d.mux { d.port } else { d.port.wrapping_add(1) };
                let socket = |port: u16, peer, kind: &str| {
                    let mut v = Value::dict()
                        .with("local address", local.to_string())
                        .with("local port", port as u64)
                        .with("family", family(local))
                        .with("endpoint", endpoint(peer))
                        .with(
                            "advertised endpoint",
                            Value::dict()
                                .with("family", family(advertised))
                                .with("address", advertised.to_string())
                                .with("port", port as u64),
                        )
                        .with("rtcp-mux", if d.mux { "yes" } else { "no" })
                        .with("crypto suite", d.endpoint_key.as_ref().map_or("", |k| k.suite.name()))
                        .with("flags", vec![Value::from(kind)]);
                    if let Some(ssrc) = ssrc {
                        v.insert("SSRC", ssrc as u64);
                    }
                    v
                };
                let rtcp_stream = socket(rtcp_port, if d.mux { peer_rtp } else { peer_rtcp }, "RTCP").with(
                    "stats",
                    Value::dict().with("packets", rtcp_in).with("bytes", rtcp_bytes_in).with("errors", 0u64),
                );
                let stream = socket(d.port, peer_rtp, "RTP")
                    .with(
                        "stats",
                        Value::dict()
                            .with("packets", st.packets_in)
                            .with("bytes", st.bytes_in)
                            .with("errors", st.dropped())
                            .with("packets lost", d.stats.rtp_lost())
                            .with("packets sent", st.packets_out)
                            .with("bytes sent", st.bytes_out)
                            .with("drops", drops)
                            .with("delay avg us", st.delay_ns_sum.checked_div(st.delay_count).unwrap_or(0) / 1000)
                            .with("delay max us", st.delay_ns_max / 1000)
                            .with("jitter us", d.stats.jitter_us.load(std::sync::atomic::Ordering::Relaxed))
                            .with("last packet", st.last_packet_ms / 1000),
                    )
                    .with("last packet", st.last_packet_ms / 1000);
                let interface = self.cfg.interfaces.get(d.at.interface).map_or("", |i| i.name.as_str());
                let mut media = Value::dict()
                    .with("index", (i + 1) as u64)
                    .with("interface", interface)
                    .with("type", s.media_type.as_str())
                    .with("protocol", d.proto.as_str())
                    .with("streams", vec![stream, rtcp_stream]);
                // The codec this leg sends and receives when the stream is
                // transcoded (rtpengine reports codecs per media as well).
                if let Some((offerer, leg)) = &s.transcoding {
                    let (mine, other) =
                        if party == *offerer { (&leg.offerer, &leg.answerer) } else { (&leg.answerer, &leg.offerer) };
                    media.insert("codec", mine.to_string());
                    media.insert("transcoded to", other.to_string());
                }
                // ICE and DTLS towards this leg (srtpgate's keys).
                if let Some(w) = self.web.get(&(call.key, i, party)) {
                    media.insert("transport state", w.state());
                    if let Some(peer) = w.ice_peer {
                        media.insert("ICE peer", peer.to_string());
                    }
                }
                // BUNDLE: the media whose transport this one shares.
                if let Some(p) = d.bundle.filter(|&p| p != i) {
                    media.insert("bundled with", (p + 1) as u64);
                    if let Some(w) = self.web.get(&(call.key, p, party)) {
                        media.insert("transport state", w.state());
                    }
                }
                medias.push(media);
            }
            let mut entry =
                Value::dict().with("tag", tag.as_str()).with("created", unix(call.created)).with("medias", medias);
            // How Kamailio's module finds a side (`mos_A_label_pv`).
            if let Some(label) = &call.labels[party] {
                entry.insert("label", label.as_str());
            }
            let subscribers = Table::subscribers_of(call, party);
            if !subscribers.is_empty() {
                entry.insert("subscribers", subscribers);
            }
            tags.insert(tag, entry);
        }
        for (tag, v) in Table::subscriber_tags(call) {
            tags.insert(&tag, v);
        }
        let totals = Value::dict()
            .with(
                "RTP",
                Value::dict()
                    .with("packets", total_rtp.packets_in)
                    .with("bytes", total_rtp.bytes_in)
                    .with("errors", total_rtp.dropped()),
            )
            .with("RTCP", Value::dict().with("packets", rtcp_packets).with("bytes", rtcp_bytes).with("errors", 0u64));
        // rtpengine's `last signal` is UNIX time.
        let since_signal = now.mono.saturating_duration_since(call.last_signal);
        let last_signal = unix(now.wall.checked_sub(since_signal).unwrap_or(now.wall));
        let mut reply = srtpgate_ng::ok()
            .with("created", unix(call.created))
            .with("last signal", last_signal)
            .with("SSRC", Table::quality_report(call))
            .with("tags", tags)
            .with("totals", totals);
        self.recording_report(call, &mut reply);
        Some(reply)
    }

    /// One page of Call-IDs in order: `limit` of them (32 by default) from
    /// `offset`, and no more than fit in one reply datagram. `total` is
    /// every call; when the page ends before the last, `next offset` says
    /// where the next one starts.
    pub(crate) fn list(&self, req: &Request) -> Value {
        let limit = req.limit.map_or(LIST_PAGE, |l| usize::try_from(l).unwrap_or(usize::MAX));
        let offset = req.offset.map_or(0, |o| usize::try_from(o).unwrap_or(usize::MAX));
        let budget = srtpgate_ng::MAX_REPLY - REPLY_ROOM;
        let mut used = 0;
        let mut calls: Vec<Value> = Vec::new();
        for id in self.calls.keys().skip(offset).take(limit) {
            // A string costs its length, its digits and a colon in bencode.
            used += id.len() + 8;
            if used > budget {
                break;
            }
            calls.push(Value::from(id.as_str()));
        }
        let next = offset.saturating_add(calls.len());
        let mut v = srtpgate_ng::ok().with("calls", calls).with("total", self.calls.len());
        if next < self.calls.len() {
            v.insert("next offset", next);
        }
        v
    }

    /// The `statistics` reply, in rtpengine's shape where it has one.
    pub(crate) fn statistics(&self, now: Now, res: &dyn Resources) -> Value {
        let (ended, h) = res.media_totals();
        let managed = self.totals.calls_created;
        let q = |x: f64| h.quantile_us(x).map_or(-1, |v| v as i64);
        let transcoded = self.transcoded_media();
        let m = &self.totals.quality;
        let mean = if m.mos_samples > 0 { m.mos_sum as f64 / m.mos_samples as f64 } else { 0.0 };
        let variance =
            if m.mos_samples > 0 { (m.mos2_sum as f64 / m.mos_samples as f64 - mean * mean).abs() } else { 0.0 };
        Value::dict().with("result", "ok").with(
            "statistics",
            Value::dict()
                .with(
                    "currentstatistics",
                    Value::dict()
                        .with("sessionsown", self.calls.len())
                        .with("sessionsforeign", 0u64)
                        .with("sessionstotal", self.calls.len())
                        .with("transcodedmedia", transcoded),
                )
                .with(
                    "totalstatistics",
                    Value::dict()
                        .with("uptime", now.mono.saturating_duration_since(self.started).as_secs())
                        .with("managedsessions", managed)
                        .with("rejectedsessions", self.totals.offers_refused)
                        .with("timeoutsessions", self.totals.calls_timed_out)
                        .with("finaltimeoutsessions", self.totals.calls_final_timeout)
                        .with("regularterminatedsessions", self.totals.calls_deleted)
                        .with("packetsrelayed", ended.packets_out)
                        .with("bytesrelayed", ended.bytes_out)
                        .with("errors", ended.dropped()),
                )
                .with(
                    // rtpengine's MOS statistics over every sample, its
                    // decimals as strings as rtpengine sends them.
                    "mos",
                    Value::dict()
                        .with("mos_total", format!("{:.6}", m.mos_sum as f64 / 10.0))
                        .with("mos2_total", format!("{:.6}", m.mos2_sum as f64 / 100.0))
                        .with("mos_samples_total", m.mos_samples)
                        .with("mos_average", format!("{:.6}", mean / 10.0))
                        .with("mos_stddev", format!("{:.6}", variance.sqrt() / 10.0)),
                )
                .with(
                    "relaydelay",
                    Value::dict()
                        .with("packets", h.count())
                        .with("p50 us at most", q(0.5))
                        .with("p99 us at most", q(0.99))
                        .with("p999 us at most", q(0.999))
                        .with(
                            "bounds us",
                            srtpgate_stats::DELAY_BOUNDS_US.iter().map(|b| Value::from(*b)).collect::<Vec<_>>(),
                        )
                        .with("counts", h.buckets.iter().map(|c| Value::from(*c)).collect::<Vec<_>>()),
                ),
        )
    }

    /// Media streams being transcoded now (rtpengine's `transcodedmedia`).
    pub fn transcoded_media(&self) -> usize {
        self.calls.values().flat_map(|c| c.streams.iter().flatten()).filter(|s| s.transcoding.is_some()).count()
    }

    /// The calls, by Call-ID in order.
    pub fn calls(&self) -> impl Iterator<Item = (&str, &Call)> {
        self.calls.iter().map(|(id, c)| (id.as_str(), c))
    }

    /// One call.
    pub fn call(&self, call_id: &str) -> Option<&Call> {
        self.calls.get(call_id)
    }

    /// The state of a leg's ICE/DTLS transport, when it runs one.
    pub fn transport_state(&self, call: CallKey, stream: usize, party: usize) -> Option<&'static str> {
        self.web.get(&(call, stream, party)).map(|w| w.state())
    }
}
