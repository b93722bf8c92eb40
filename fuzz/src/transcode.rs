//! Fuzz logic of the transcoder (`srtpgate-codec`): plain RTP from an
//! endpoint is untrusted input.
//!
//! Input: byte 0 picks the output packet time (its low 7 bits: 0, the
//! input's; else 10 ms × (1 + b % 6)) and, with its top bit, RFC 4733 events
//! on 101 played as tones (a receiver without telephone-event) instead of
//! passed on 101 → 96; then records as in the SRTP targets, each one packet
//! pushed into a PCMU → PCMA transcoder (which also runs the reorder window
//! on what arrives out of order). No push
//! may panic, and every packet it writes must be a version-2 RTP header with
//! the output payload type (or the event type) and fit the output buffer.
//! Each record is also walked as a plain RTCP compound packet of the stream
//! (`transcode::rtcp`: sender report times rewritten, fraction lost read),
//! which must not panic or change the packet's length.

use srtpgate_codec::transcode::{Direction, Transcoder, MAX_OUTPUTS, MAX_PACKET};
use srtpgate_codec::Registry;

/// The `transcode` target.
pub fn transcode(data: &[u8]) {
    let Some((&cfg, rest)) = data.split_first() else { return };
    let r = Registry::new();
    let (pu, iu) = r.find("PCMU", 8000, 1).expect("in-tree PCMU");
    let (pa, ia) = r.find("PCMA", 8000, 1).expect("in-tree PCMA");
    let mut t = Transcoder::new(Direction {
        decoder: pu.instance(iu, None, None).expect("PCMU state"),
        in_pt: 0,
        encoder: pa.instance(ia, None, None).expect("PCMA state"),
        out_pt: 8,
        out_ptime: (cfg & 0x7f != 0).then(|| 10 * (1 + (cfg & 0x7f) as u32 % 6)),
        dtmf: (cfg & 0x80 == 0).then_some((101, 96)),
        detect: None,
        tones_from: (cfg & 0x80 != 0).then_some(101),
    })
    .expect("G.711 transcoder");
    for p in crate::records(rest) {
        let mut rtcp = p.to_vec();
        let lost = srtpgate_codec::transcode::rtcp(&mut rtcp, Some(&t));
        assert_eq!(rtcp.len(), p.len());
        if let Some(f) = lost {
            let _ = t.set_receiver_loss(f);
        }
        let _ = t.push(p);
        let mut n = 0;
        for o in t.outputs() {
            n += 1;
            assert!(o.len() >= 12 && o.len() <= MAX_PACKET, "output of {} bytes", o.len());
            assert_eq!(o[0], 0x80, "output header byte 0");
            assert!(matches!(o[1] & 0x7f, 8 | 96), "output payload type {}", o[1] & 0x7f);
        }
        assert!(n <= MAX_OUTPUTS);
    }
}
