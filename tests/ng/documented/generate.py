#!/usr/bin/env python3
"""Writes the NG request fixtures of this directory from rtpengine's protocol
documentation (docs/ng_control_protocol.md in sipwise/rtpengine) and the
rtpengine modules of Kamailio and OpenSIPS: NN-name.bin (one raw datagram:
`<cookie> <bencoded dict>`), expected.json (what a relay should answer) and
README.md (each request decoded). Deterministic: rerunning gives the same bytes.

    python3 tests/ng/documented/generate.py
"""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "e2e"))
from ng_stub import bencode  # noqa: E402

CALL = "fixture-call-1@192.0.2.10"
CALL2 = "fixture-call-2@192.0.2.10"
FROM_TAG, TO_TAG = "ftag-alice-1", "ttag-bob-1"
# Fixed, made-up keys (30 bytes of key+salt each, base64) so files are stable.
KEY_A = "QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFB"
KEY_A32 = "QkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJC"
KEY_B = "Q0NDQ0NDQ0NDQ0NDQ0NDQ0NDQ0NDQ0NDQ0NDQ0ND"


def sdp(user, ip, port, proto="RTP/AVP", crypto=(), extra=()):
    lines = ["v=0", "o=%s 1000 1000 IN IP4 %s" % (user, ip), "s=-", "c=IN IP4 %s" % ip, "t=0 0",
             "m=audio %d %s 0 8 101" % (port, proto), "a=rtpmap:0 PCMU/8000",
             "a=rtpmap:8 PCMA/8000", "a=rtpmap:101 telephone-event/8000", "a=fmtp:101 0-16",
             "a=ptime:20", "a=sendrecv"]
    lines += list(crypto) + list(extra)
    return "\r\n".join(lines) + "\r\n"


ICE = ["a=ice-ufrag:F7gI", "a=ice-pwd:x9cml/YzichV2+XlhiMu8g",
       "a=candidate:1 1 UDP 2130706431 192.0.2.10 40000 typ host",
       "a=candidate:1 2 UDP 2130706430 192.0.2.10 40001 typ host"]
SAVP_OFFER = sdp("alice", "192.0.2.10", 40000, "RTP/SAVP", [
    "a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:" + KEY_A,
    "a=crypto:2 AES_CM_128_HMAC_SHA1_32 inline:" + KEY_A32], ICE)
SAVP_ANSWER = sdp("bob", "198.51.100.20", 50000, "RTP/SAVP", [
    "a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:" + KEY_B])

# (name, request dict or raw bytes after the cookie, expected, why)
# expected: "pong", "ok", "error", "ok or error" (must answer, either is
# defensible), "no reply" (cannot answer: nothing to echo).
FIXTURES = [
    ("ping", {"command": "ping"}, "pong", "liveness; Kamailio pings every node at start"),
    ("offer-minimal", {"command": "offer", "call-id": CALL2, "from-tag": FROM_TAG,
                       "sdp": sdp("alice", "192.0.2.10", 40100)},
     "ok", "only the three required keys; plain RTP/AVP passes through as RTP/AVP"),
    ("offer-kamailio-srtp", {
        "supports": ["load limit"], "sdp": SAVP_OFFER, "ICE": "remove",
        "replace": ["origin", "session-connection"], "transport-protocol": "RTP/SAVP",
        "call-id": CALL, "received-from": ["IP4", "192.0.2.10"], "from-tag": FROM_TAG,
        "command": "offer"},
     "ok", "what Kamailio 5.6 sends for `replace-origin replace-session-connection ICE=remove "
           "RTP/SAVP` (key order as sent); reply SDP: relay address/port, new a=crypto, no ICE"),
    ("answer-kamailio-srtp", {
        "supports": ["load limit"], "sdp": SAVP_ANSWER, "ICE": "remove",
        "replace": ["origin", "session-connection"], "transport-protocol": "RTP/SAVP",
        "call-id": CALL, "received-from": ["IP4", "198.51.100.20"], "from-tag": FROM_TAG,
        "to-tag": TO_TAG, "command": "answer"},
     "ok", "answer to the previous offer; reply SDP: relay address/port, a new key for the caller"),
    ("query", {"command": "query", "call-id": CALL, "from-tag": FROM_TAG},
     "ok", "call from the two fixtures above; reply has created, last signal, tags, totals"),
    ("list", {"command": "list", "limit": 32}, "ok", "reply: calls = list of call-ids"),
    ("statistics", {"command": "statistics"}, "ok", "reply: statistics.currentstatistics etc."),
    ("offer-all-options", {
        "command": "offer", "call-id": "fixture-call-3@192.0.2.10", "from-tag": FROM_TAG,
        "sdp": SAVP_OFFER, "via-branch": "z9hG4bK5KiTRPZHH1nL6",
        "flags": ["trust address", "symmetric", "strict-source", "record call", "loop protect",
                  "port latching", "no rtcp attribute", "original sendrecv"],
        "replace": ["origin", "session connection", "SDP version", "username"],
        "transport protocol": "RTP/SAVP", "ICE": "force", "rtcp-mux": ["offer", "accept"],
        "SDES": ["no-AES_CM_128_HMAC_SHA1_32", "unencrypted_srtcp", "pad", "lifetime"],
        "DTLS": "off", "record call": "yes", "received from": ["IP4", "192.0.2.10"],
        "address family": "IP4", "media address": "192.0.2.10", "TOS": 184,
        "label": "caller", "metadata": "case:1234|agent:7", "supports": ["load limit"]},
     "ok", "documented spellings with spaces (`transport protocol`, `received from`, "
           "`record call`, ...) that rtpengine treats like the hyphenated ones"),
    ("offer-savp-to-avp", {
        "command": "offer", "call-id": "fixture-call-4@192.0.2.10", "from-tag": FROM_TAG,
        "sdp": SAVP_OFFER, "transport-protocol": "RTP/AVP", "ICE": "remove",
        "replace": ["origin", "session-connection"]},
     "ok", "SRTP caller, plain RTP callee: reply SDP has RTP/AVP and no a=crypto"),
    ("offer-avp-to-savp-rtcp-mux", {
        "command": "offer", "call-id": "fixture-call-5@192.0.2.10", "from-tag": FROM_TAG,
        "sdp": sdp("alice", "192.0.2.10", 40200, extra=["a=rtcp-mux"]),
        "transport-protocol": "RTP/SAVP", "rtcp-mux": ["demux"], "SDES": ["only-AES_CM_128_HMAC_SHA1_80"]},
     "ok", "plain caller, SRTP callee: reply SDP has RTP/SAVP and a relay a=crypto; rtcp-mux not offered on"),
    ("delete", {"command": "delete", "call-id": CALL, "from-tag": FROM_TAG,
                "received-from": ["IP4", "192.0.2.10"], "supports": ["load limit"]},
     "ok", "ends the call of fixtures 03/04; reply may carry the query statistics"),
    ("delete-to-tag-via-branch-delay", {
        "command": "delete", "call-id": "fixture-call-3@192.0.2.10", "from-tag": FROM_TAG,
        "to-tag": TO_TAG, "via-branch": "z9hG4bK5KiTRPZHH1nL6", "delete delay": 0,
        "flags": ["fatal"]},
     "ok or error", "ends fixture 08's call immediately; to-tag never answered, so a strict "
                    "match with `fatal` may fail"),
    ("delete-unknown-call", {"command": "delete", "call-id": "no-such-call@192.0.2.10",
                             "from-tag": FROM_TAG},
     "ok", "rtpengine replies ok with a `warning` unless `fatal` is given; Kamailio sends this "
           "twice for a rejected call (reply route and failure route)"),
    ("query-after-delete", {"command": "query", "call-id": CALL},
     "error", "the call was deleted (fixture 11): Unknown call-id"),
    # --- bad requests -------------------------------------------------------
    ("bad-unknown-command", {"command": "frobnicate", "call-id": CALL}, "error",
     "unknown command"),
    ("bad-unknown-flag", {"command": "offer", "call-id": "fixture-call-6@192.0.2.10",
                          "from-tag": FROM_TAG, "sdp": sdp("alice", "192.0.2.10", 40300),
                          "flags": ["no-such-flag"], "no-such-key": "x"},
     "ok or error", "rtpengine logs and ignores unknown flags and keys; a relay may refuse"),
    ("bad-missing-call-id", {"command": "offer", "from-tag": FROM_TAG,
                             "sdp": sdp("alice", "192.0.2.10", 40400)}, "error",
     "offer without call-id"),
    ("bad-missing-from-tag", {"command": "offer", "call-id": "fixture-call-7@192.0.2.10",
                              "sdp": sdp("alice", "192.0.2.10", 40500)}, "error",
     "offer without from-tag"),
    ("bad-missing-sdp", {"command": "offer", "call-id": "fixture-call-8@192.0.2.10",
                         "from-tag": FROM_TAG}, "error", "offer without sdp"),
    ("bad-sdp-garbage", {"command": "offer", "call-id": "fixture-call-9@192.0.2.10",
                         "from-tag": FROM_TAG, "sdp": "hello\r\n"}, "error", "unparsable SDP"),
    ("bad-answer-unknown-call", {"command": "answer", "call-id": "no-such-call@192.0.2.10",
                                 "from-tag": FROM_TAG, "to-tag": TO_TAG, "sdp": SAVP_ANSWER},
     "error", "answer for a call never offered"),
    ("bad-command-not-string", {"command": 5}, "error", "command is an integer"),
    ("bad-not-a-dict", b"l7:command4:pinge", "error", "a list, not a dictionary"),
    ("bad-malformed-bencode", b"d7:command4:ping", "error", "dictionary never closed"),
    ("bad-string-too-long", b"d7:command99:pinge", "error", "string length past the end"),
    ("bad-no-cookie", None, "no reply", "bencode with no `cookie ` prefix: nothing to echo, drop it"),
]


def main():
    for f in os.listdir(HERE):
        if f.endswith(".bin"):
            os.remove(os.path.join(HERE, f))
    expected = {}
    readme = [
        "# NG request fixtures from the documentation",
        "",
        "Written by `generate.py` from rtpengine's `docs/ng_control_protocol.md` and the",
        "rtpengine modules of Kamailio and OpenSIPS. Each `NN-name.bin` is one UDP datagram,",
        "`<cookie> <bencoded dict>`; the cookie is `fixture-NN`. Run them in order against one",
        "relay: later ones refer to calls made by earlier ones. `expected.json` maps each file to",
        "the expected `result` (`pong`, `ok`, `error`, `ok or error`, or `no reply`).",
        "",
        "Conventions a relay must follow (from the documentation): the reply starts with the",
        "request's cookie and a space; `result` is `ok`/`error`/`pong` (or `load limit` when the",
        "request has `supports: [\"load limit\"]`); an error has `error-reason`; flags and keys may",
        "spell spaces as hyphens (`transport protocol` = `transport-protocol`); bencode",
        "dictionaries need not be sorted.",
        "",
        "SDP addresses are documentation ranges (192.0.2.0/24, 198.51.100.0/24); keys are fixed",
        "made-up values.",
        "",
    ]
    for n, (name, req, result, why) in enumerate(FIXTURES, 1):
        fname = "%02d-%s.bin" % (n, name)
        cookie = b"fixture-%02d " % n
        if req is None:
            data = bencode({"command": "ping"})
        elif isinstance(req, bytes):
            data = cookie + req
        else:
            data = cookie + bencode(req)
        with open(os.path.join(HERE, fname), "wb") as f:
            f.write(data)
        expected[fname] = result
        readme += ["## %s — expect `%s`" % (fname, result), "", why + ".", ""]
        if isinstance(req, dict):
            shown = dict(req)
            body = shown.pop("sdp", None)
            readme += ["```json", json.dumps(shown, indent=2), "```", ""]
            if body is not None:
                readme += ["`sdp`:", "", "```", body.rstrip("\r\n"), "```", ""]
        else:
            readme += ["Raw bytes: `%s`" % data.decode(), ""]
    with open(os.path.join(HERE, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1)
        f.write("\n")
    with open(os.path.join(HERE, "README.md"), "w") as f:
        f.write("\n".join(readme))
    print("wrote %d fixtures to %s" % (len(FIXTURES), HERE))


if __name__ == "__main__":
    main()
