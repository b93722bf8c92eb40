#!/usr/bin/env python3
"""A small SIP user agent over UDP for the end-to-end tests (no SIP library).

It does what a softphone does in the simplest call through a proxy:
REGISTER; place a call (INVITE with an SRTP/SDES offer, or a plain RTP one,
wait through 1xx for the 200, ACK along the Record-Route set, BYE) or answer
one (180, 200 with an answer of the offer's kind, wait for the ACK); answer BYE
with 200. Once a call is up it sends RTP to the address in the SDP it
received; with SRTP protected with its own key, and it unprotects what arrives
with the key from the SDP it received (pylibsrtp).

Optionally (off by default) it also does what a phone does with RTCP
(rtcp_interval): a compound SR (or RR before it has sent RTP) with one report
block about the stream it receives and an SDES CNAME, as SRTCP with its key,
to the RTCP address of the SDP it received (a=rtcp, else the next port;
the RTP port with a=rtcp-mux); it unprotects the SRTCP that reaches it and
keeps the last SR of each sender for LSR/DLSR. And it can impair what it
sends (Impairment: seeded loss and delay jitter, order kept).

Deliberately left out: retransmission timers (the tests run over loopback),
authentication, forking, re-INVITE, TCP.
"""

import base64
import os
import queue
import re
import socket
import struct
import threading
import time
import uuid

from netns import inside

COMPACT = {"v": "via", "f": "from", "t": "to", "i": "call-id", "m": "contact",
           "l": "content-length", "c": "content-type"}

# SDES suites we can key with pylibsrtp, in order of preference; key+salt bytes.
SUITES = {"AES_CM_128_HMAC_SHA1_80": 30, "AES_CM_128_HMAC_SHA1_32": 30}

PAYLOAD_LEN = 160  # G.711, 20 ms


class SipMessage:
    def __init__(self, first, headers, body):
        self.first = first          # start line
        self.headers = headers      # [(lower-case name, value)], in order
        self.body = body

    @classmethod
    def parse(cls, data):
        head, _, body = data.partition(b"\r\n\r\n")
        lines = head.decode().split("\r\n")
        headers = []
        for line in lines[1:]:
            if line[:1] in (" ", "\t") and headers:  # folded continuation
                headers[-1] = (headers[-1][0], headers[-1][1] + " " + line.strip())
                continue
            name, _, value = line.partition(":")
            name = name.strip().lower()
            headers.append((COMPACT.get(name, name), value.strip()))
        return cls(lines[0], headers, body)

    @property
    def is_request(self):
        return not self.first.startswith("SIP/2.0 ")

    @property
    def method(self):
        return self.first.split()[0] if self.is_request else self.get("cseq").split()[1]

    @property
    def status(self):
        return None if self.is_request else int(self.first.split()[1])

    def get(self, name):
        return next((v for n, v in self.headers if n == name), None)

    def all(self, name):
        """All values of a header, including comma-joined ones (Via, Record-Route)."""
        out = []
        for n, v in self.headers:
            if n == name:
                out += [x.strip() for x in re.split(r",(?=(?:[^\"]*\"[^\"]*\")*[^\"]*$)(?![^<]*>)", v)]
        return out


def tag_of(header):
    m = re.search(r";\s*tag=([^;>\s]+)", header)
    return m.group(1) if m else None


def uri_of(header):
    m = re.search(r"<([^>]+)>", header)
    return m.group(1) if m else header.split(";")[0].strip()


def hostport_of(uri):
    """(host, port) a SIP URI points at (UDP, no DNS: the tests use IPs)."""
    m = re.match(r"sips?:(?:[^@]+@)?([^:;>]+)(?::(\d+))?", uri)
    return m.group(1), int(m.group(2) or 5060)


def random_token():
    return uuid.uuid4().hex[:16]


class Sdp:
    """The few things we need from an SDP body: first audio stream's address,
    port, profile and crypto lines."""

    def __init__(self, body):
        self.raw = body.decode() if isinstance(body, bytes) else body
        self.lines = self.raw.replace("\r\n", "\n").strip().split("\n")
        session_c = media_c = None
        self.port = self.proto = None
        self.crypto = []  # (tag, suite, key+salt bytes, full line)
        self.rtcp_port = self.rtcp_addr = None  # a=rtcp:PORT [IN IP4 ADDR]
        self.rtcp_mux = False
        self.ice = [l for l in self.lines if re.match(r"a=(candidate|ice-)", l)]
        self.origin = next((l for l in self.lines if l.startswith("o=")), None)
        in_audio = False
        for line in self.lines:
            if line.startswith("m="):
                in_audio = line.startswith("m=audio") and self.port is None
                if in_audio:
                    _, port, self.proto = line[2:].split()[:3]
                    self.port = int(port)
            elif line.startswith("c="):
                if in_audio:
                    media_c = line.split()[-1]
                elif self.port is None:
                    session_c = line.split()[-1]
            elif in_audio and line.startswith("a=crypto:"):
                tag, suite, params = line[len("a=crypto:"):].split()[:3]
                inline = params.split("inline:", 1)[1]
                b64, _, lifetime_mki = inline.partition("|")
                self.crypto.append((int(tag), suite, base64.b64decode(b64), line, lifetime_mki))
            elif in_audio and line.startswith("a=rtcp:"):
                parts = line[len("a=rtcp:"):].split()
                if parts and parts[0].isdigit():
                    self.rtcp_port = int(parts[0])
                    if len(parts) >= 4:
                        self.rtcp_addr = parts[3]
            elif in_audio and line.strip() == "a=rtcp-mux":
                self.rtcp_mux = True
        self.addr = media_c or session_c

    def rtcp_dest(self):
        """Where RTCP for this stream goes: the RTP address with a=rtcp-mux,
        else a=rtcp's port (and address), else the next port."""
        if self.port is None:
            return None
        if self.rtcp_mux:
            return (self.addr, self.port)
        if self.rtcp_port is not None:
            return (self.rtcp_addr or self.addr, self.rtcp_port)
        return (self.addr, self.port + 1)


RTPMAP = {0: "PCMU/8000", 8: "PCMA/8000"}


def make_sdp(user, ip, port, crypto_lines, with_ice=False, codecs=(0, 8)):
    """An audio offer or answer: RTP/SAVP with the crypto lines, or plain
    RTP/AVP when there are none."""
    sid = int(time.time())
    lines = [
        "v=0",
        "o=%s %d %d IN IP4 %s" % (user, sid, sid, ip),
        "s=-",
        "c=IN IP4 %s" % ip,
        "t=0 0",
        "m=audio %d %s %s 101" % (port, "RTP/SAVP" if crypto_lines else "RTP/AVP",
                                  " ".join(str(c) for c in codecs)),
    ] + ["a=rtpmap:%d %s" % (c, RTPMAP[c]) for c in codecs] + [
        "a=rtpmap:101 telephone-event/8000",
        "a=fmtp:101 0-16",
        "a=ptime:20",
        "a=sendrecv",
    ]
    lines += crypto_lines
    if with_ice:
        # Host candidates pointing straight at us: the relay must strip them
        # (ICE=remove), or a real phone would bypass it.
        lines += ["a=ice-ufrag:%s" % random_token()[:8],
                  "a=ice-pwd:%s" % (random_token() + random_token())[:24],
                  "a=candidate:1 1 UDP 2130706431 %s %d typ host" % (ip, port),
                  "a=candidate:1 2 UDP 2130706430 %s %d typ host" % (ip, port + 1)]
    return ("\r\n".join(lines) + "\r\n").encode()


def new_key(suite):
    return os.urandom(SUITES[suite])


def crypto_line(tag, suite, key):
    return "a=crypto:%d %s inline:%s" % (tag, suite, base64.b64encode(key).decode())


class Plain:
    """What a pylibsrtp session does, for plain RTP: nothing."""

    @staticmethod
    def protect(packet):
        return packet

    @staticmethod
    def unprotect(packet):
        return packet

    protect_rtcp = unprotect_rtcp = protect



NTP_EPOCH = 2208988800   # seconds from 1900 (NTP) to 1970 (UNIX)
CLOCK = 8000             # G.711's RTP clock, for jitter and SR timestamps


def ntp_now():
    """The wall clock as a 64-bit NTP timestamp (seconds, fraction)."""
    t = time.time()
    sec = int(t)
    return (sec + NTP_EPOCH) & 0xFFFFFFFF, int((t - sec) * (1 << 32)) & 0xFFFFFFFF


class Impairment:
    """What a bad network does to the RTP a phone sends, seeded so a run
    repeats: each packet is lost with probability `loss`, and one that is
    not leaves `delay` after its 20 ms slot, `delay` drawn uniformly from
    [0, 2 * jitter_ms] ms (mean jitter_ms), in order: a packet never
    overtakes the one before it, so it leaves at max(its slot + delay, when
    the previous one left). For every packet, lost or not, one draw decides
    the loss and one the delay (random.Random(seed)), so a seed gives the
    same losses whatever the delays. The lost packets' sequence numbers are
    kept in `dropped` and every packet offered in `offered`, to count."""

    def __init__(self, loss=0.0, jitter_ms=0.0, seed=1):
        import random
        self.loss, self.jitter_ms, self.seed = loss, jitter_ms, seed
        self.rng = random.Random(seed)
        self.offered = []   # sequence numbers, in order
        self.dropped = []   # the lost ones

    def draw(self, seq):
        """(lost, delay in s) for the packet with sequence number seq."""
        lost = self.rng.random() < self.loss
        delay = self.rng.uniform(0.0, 2.0 * self.jitter_ms) / 1000.0
        self.offered.append(seq)
        if lost:
            self.dropped.append(seq)
        return lost, delay


class _Locked:
    """A pylibsrtp session (or Plain) used from several threads (RTP, RTCP):
    libsrtp's streams are not thread-safe, and cffi lets go of the GIL."""

    def __init__(self, session):
        self.session, self.lock = session, threading.Lock()

    def __getattr__(self, name):
        f = getattr(self.session, name)

        def locked(*a):
            with self.lock:
                return f(*a)
        return locked


class _Source:
    """What a receiver keeps of one sender's RTP for its report block
    (RFC 3550 A.1 sequence and loss counting, A.3 loss, A.8 jitter)."""

    def __init__(self, seq):
        self.base_seq = self.max_seq = seq
        self.cycles = self.received = 0
        self.expected_prior = self.received_prior = 0
        self.transit = None
        self.jitter = 0.0   # in timestamp units

    def update(self, seq, ts, arrival):
        """A packet with seq and RTP timestamp ts arrived at `arrival`
        (monotonic s)."""
        udelta = (seq - self.max_seq) & 0xFFFF
        if udelta < 3000:            # in order, possibly with a gap
            if seq < self.max_seq:
                self.cycles += 1 << 16
            self.max_seq = seq
        elif udelta <= (1 << 16) - 100:
            # A big jump: the source restarted (A.1 waits for a second
            # packet to confirm; a test's stream does not jump by chance).
            self.__init__(seq)
        # else a duplicate or a late packet: counted, max_seq stays.
        self.received += 1
        transit = int(arrival * CLOCK) - ts
        if self.transit is not None:
            d = ((transit - self.transit + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)
            self.jitter += (abs(d) - self.jitter) / 16.0
        self.transit = transit

    def block(self, ssrc, last_sr, now):
        """The 24-byte report block about `ssrc`, as of now (monotonic s);
        last_sr: (LSR, when it arrived) of that sender's last SR, or None.
        Moves the interval for the next fraction lost."""
        extended_max = self.cycles + self.max_seq
        expected = extended_max - self.base_seq + 1
        lost = max(-0x800000, min(0x7FFFFF, expected - self.received))
        expected_interval = expected - self.expected_prior
        received_interval = self.received - self.received_prior
        self.expected_prior, self.received_prior = expected, self.received
        lost_interval = expected_interval - received_interval
        fraction = 0 if expected_interval == 0 or lost_interval <= 0 else \
            min(255, (lost_interval << 8) // expected_interval)
        lsr = dlsr = 0
        if last_sr is not None:
            lsr = last_sr[0]
            dlsr = int((now - last_sr[1]) * 65536) & 0xFFFFFFFF
        return struct.pack("!IB3sIIII", ssrc, fraction, (lost & 0xFFFFFF).to_bytes(3, "big"),
                           extended_max & 0xFFFFFFFF, int(self.jitter) & 0xFFFFFFFF, lsr, dlsr)


def rtcp_sr(ssrc, ntp, rtp_ts, packets, octets, blocks):
    """A sender report (RFC 3550 6.4.1) with these report blocks."""
    body = struct.pack("!IIIIII", ssrc, ntp[0], ntp[1], rtp_ts & 0xFFFFFFFF,
                       packets & 0xFFFFFFFF, octets & 0xFFFFFFFF) + b"".join(blocks)
    return struct.pack("!BBH", 0x80 | len(blocks), 200, (4 + len(body)) // 4 - 1) + body


def rtcp_rr(ssrc, blocks):
    """A receiver report (RFC 3550 6.4.2)."""
    body = struct.pack("!I", ssrc) + b"".join(blocks)
    return struct.pack("!BBH", 0x80 | len(blocks), 201, (4 + len(body)) // 4 - 1) + body


def rtcp_sdes_cname(ssrc, cname):
    """An SDES packet with one chunk: CNAME (RFC 3550 6.5), the item list
    ended by one to four null octets up to a 32-bit boundary."""
    items = bytes([1, len(cname)]) + cname
    chunk = struct.pack("!I", ssrc) + items + b"\0" * (4 - len(items) % 4)
    return struct.pack("!BBH", 0x81, 202, len(chunk) // 4) + chunk


def rtcp_parse(data):
    """The packets of a compound RTCP packet, as dicts: type (pt), ssrc and
    for SR/RR the sender info and report blocks. Raises ValueError on a
    malformed one."""
    out, i = [], 0
    while i < len(data):
        if len(data) - i < 4 or data[i] >> 6 != 2:
            raise ValueError("bad RTCP header at %d" % i)
        count, pt, length = data[i] & 0x1F, data[i + 1], struct.unpack("!H", data[i + 2:i + 4])[0]
        end = i + 4 * (length + 1)
        if end > len(data):
            raise ValueError("RTCP packet at %d runs past the end" % i)
        body = data[i + 4:end]
        p = {"pt": pt, "count": count}
        if pt in (200, 201) and len(body) >= 4:
            p["ssrc"] = struct.unpack("!I", body[:4])[0]
            off = 4
            if pt == 200:
                (p["ntp_sec"], p["ntp_frac"], p["rtp_ts"], p["packets"],
                 p["octets"]) = struct.unpack("!IIIII", body[4:24])
                off = 24
            p["blocks"] = []
            for _ in range(count):
                ssrc, fl, lost3, ehs, jit, lsr, dlsr = struct.unpack("!IB3sIIII", body[off:off + 24])
                lost = int.from_bytes(lost3, "big")
                if lost & 0x800000:
                    lost -= 1 << 24
                p["blocks"].append({"ssrc": ssrc, "fraction": fl, "lost": lost, "ehs": ehs,
                                    "jitter": jit, "lsr": lsr, "dlsr": dlsr})
                off += 24
        elif len(body) >= 4:
            p["ssrc"] = struct.unpack("!I", body[:4])[0]
        out.append(p)
        i = end
    return out


class Media:
    """One RTP endpoint: sends SRTP with our key, unprotects with the peer's
    (or plain RTP both ways when the call has no keys)."""

    def __init__(self, sock, name, rtcp_sock=None, rtcp_interval=None, rtcp_phase=0.0, impair=None):
        """rtcp_interval (s): send a report every that often, the first
        rtcp_phase s after start() (None: no RTCP, as before); RTCP goes out
        of and comes in on rtcp_sock (None: the RTP socket, muxed). impair:
        an Impairment of the RTP it sends."""
        self.sock = sock
        self.user = name
        self.name = name.encode()[:4].ljust(4, b"_")  # payload tag
        self.ssrc = struct.unpack("!I", os.urandom(4))[0]
        self.received = {}       # seq -> (ssrc, payload)
        self.pts = {}            # seq -> payload type
        self.rx_errors = []
        self.rx_from = set()
        self.stop = threading.Event()
        self.rtcp_sock, self.rtcp_interval, self.rtcp_phase = rtcp_sock, rtcp_interval, rtcp_phase
        self.impair = impair
        self.rtcp_sent = []      # the plain compound packets sent
        self.rtcp_got = []       # (monotonic s, parsed packets) of what arrived
        self.rtcp_errors = []
        self.rtcp_paused = threading.Event()
        self.tx_packets = self.tx_octets = 0
        self.tx_last = None      # (RTP timestamp, monotonic s) of the last packet sent
        self.sources = {}        # ssrc -> _Source, what we receive
        self.last_sr = {}        # ssrc -> (LSR, monotonic s it arrived)
        self.stats_lock = threading.Lock()

    @staticmethod
    def payload(name, seq):
        """Content the receiver can check: sender name, seq, then seq-derived bytes."""
        head = name + struct.pack("!I", seq)
        return head + bytes((seq * 7 + i) & 0xFF for i in range(PAYLOAD_LEN - len(head)))

    def start(self, tx_suite, tx_key, rx_suite, rx_key, dest, rtcp_dest=None):
        """Starts receiving; tx_suite None: plain RTP both ways. rtcp_dest:
        where our RTCP goes (with rtcp_interval; None: dest's next port)."""
        import pylibsrtp  # only the media tests need it

        def session(suite, key, direction):
            if suite is None:
                return Plain()
            profile = {"AES_CM_128_HMAC_SHA1_80": pylibsrtp.Policy.SRTP_PROFILE_AES128_CM_SHA1_80,
                       "AES_CM_128_HMAC_SHA1_32": pylibsrtp.Policy.SRTP_PROFILE_AES128_CM_SHA1_32}[suite]
            pol = pylibsrtp.Policy(key=key, ssrc_type=direction, srtp_profile=profile)
            return pylibsrtp.Session(policy=pol)

        self.tx = session(tx_suite, tx_key, pylibsrtp.Policy.SSRC_ANY_OUTBOUND)
        self.rx = session(rx_suite, rx_key, pylibsrtp.Policy.SSRC_ANY_INBOUND)
        self.dest = dest
        self.threads = []
        if self.rtcp_interval is not None or self.impair is not None:
            self.tx, self.rx = _Locked(self.tx), _Locked(self.rx)
        if self.impair is not None:
            self.outq = queue.Queue()
            self.threads.append(threading.Thread(target=self._delayer, daemon=True))
        if self.rtcp_interval is not None:
            self.rtcp_dest = rtcp_dest or (dest[0], dest[1] + 1)
            if self.rtcp_sock is not None:
                self.threads.append(threading.Thread(target=self._rtcp_receive, daemon=True))
            self.threads.append(threading.Thread(target=self._rtcp_sender, daemon=True))
        self.rx_thread = threading.Thread(target=self._receive, daemon=True)
        self.rx_thread.start()
        for t in self.threads:
            t.start()

    def _receive(self):
        self.sock.settimeout(0.1)
        while not self.stop.is_set():
            try:
                data, src = self.sock.recvfrom(2048)
            except socket.timeout:
                continue
            except OSError:
                return
            arrival = time.monotonic()
            self.rx_from.add(src)
            if self.rtcp_interval is not None and len(data) >= 8 \
                    and data[0] >> 6 == 2 and 200 <= data[1] <= 204:
                self._rtcp_in(data, src)  # RTCP on a muxed port
                continue
            if len(data) < 12 or data[0] >> 6 != 2 or 72 <= data[1] & 0x7F <= 79:
                continue  # not RTP (or RTCP on a muxed port): not what we check
            try:
                plain = self.rx.unprotect(data)
            except Exception as e:  # pylibsrtp.Error: auth failure, replay, ...
                self.rx_errors.append("%s (%d bytes from %s)" % (e, len(data), src))
                continue
            seq, = struct.unpack("!H", plain[2:4])
            ssrc, = struct.unpack("!I", plain[8:12])
            if self.rtcp_interval is not None:
                with self.stats_lock:
                    if ssrc not in self.sources:
                        self.sources[ssrc] = _Source(seq)
                    self.sources[ssrc].update(seq, struct.unpack("!I", plain[4:8])[0], arrival)
            head = 12 + 4 * (plain[0] & 0x0F)
            if plain[0] & 0x10 and len(plain) >= head + 4:
                # A header extension (RFC 3550 5.3.1), e.g. a browser's mid
                # or audio level: skipped, as every receiver must.
                head += 4 + 4 * struct.unpack("!H", plain[head + 2:head + 4])[0]
            self.received[seq] = (ssrc, plain[head:])
            self.pts[seq] = plain[1] & 0x7F

    def send(self, count, interval=0.02):
        ts = struct.unpack("!I", os.urandom(4))[0]
        t0 = time.monotonic()
        for seq in range(count):
            hdr = struct.pack("!BBHII", 0x80, (0x80 if seq == 0 else 0) | 0, seq, (ts + 160 * seq) & 0xFFFFFFFF, self.ssrc)
            self._out(hdr + self.payload(self.name, seq))
            time.sleep(max(0.0, t0 + (seq + 1) * interval - time.monotonic()))
        self._drain()

    def send_tone(self, count, pt, hz, interval=0.02):
        """`count` packets of 20 ms of a `hz` tone, G.711 with payload type `pt`."""
        from audio import ENCODE, tone
        ts = struct.unpack("!I", os.urandom(4))[0]
        t0 = time.monotonic()
        for seq in range(count):
            payload = bytes(ENCODE[pt](x) for x in tone(hz, 160 * seq, 160))
            hdr = struct.pack("!BBHII", 0x80, (0x80 if seq == 0 else 0) | pt, seq,
                              (ts + 160 * seq) & 0xFFFFFFFF, self.ssrc)
            self._out(hdr + payload)
            time.sleep(max(0.0, t0 + (seq + 1) * interval - time.monotonic()))
        self._drain()

    def check_tone(self, peer_name, count, pt, hz):
        """Problems with the tone from peer_name: every packet there, with
        payload type `pt`, decoding to `hz` at the level sent ([] if none)."""
        from audio import DECODE, tone_share
        problems = []
        missing = [s for s in range(count) if s not in self.received]
        if missing:
            problems.append("%s: %d of %d packets from %s missing (first: %s)"
                            % (self.user, len(missing), count, peer_name, missing[:5]))
        wrong = sorted({p for s, p in self.pts.items() if p != pt})
        if wrong:
            problems.append("%s: payload types %s from %s, expected %d" % (self.user, wrong, peer_name, pt))
        pcm = [DECODE[pt](c) for s in sorted(self.received) if s < count for c in self.received[s][1]]
        share, rms = tone_share(pcm, hz)
        if share < 0.9 or not 4800 <= rms <= 6500:
            problems.append("%s: audio from %s is %.0f %% a %g Hz tone at RMS %.0f (sent: 100 %%, 5657)"
                            % (self.user, peer_name, share * 100, hz, rms))
        if self.rx_errors:
            problems.append("%s: %d packets failed to unprotect, e.g. %s"
                            % (self.user, len(self.rx_errors), self.rx_errors[0]))
        return problems

    def audio(self, pt):
        """(packets with payload type `pt`, their decoded PCM at 8 kHz in
        sequence order): for a peer whose sequence numbers we do not know (a
        browser)."""
        from audio import DECODE
        seqs = sorted(s for s, p in self.pts.items() if p == pt)
        return len(seqs), [DECODE[pt](c) for s in seqs for c in self.received[s][1]]

    def check(self, peer_name, count):
        """Problems with what arrived from peer_name's `count` packets ([] if none)."""
        peer = peer_name.encode()[:4].ljust(4, b"_")
        problems = []
        missing = [s for s in range(count) if s not in self.received]
        if missing:
            problems.append("%s: %d of %d packets from %s missing (first: %s)"
                            % (self.user, len(missing), count, peer_name, missing[:5]))
        bad = [s for s, (_, p) in self.received.items() if s < count and p != self.payload(peer, s)]
        if bad:
            problems.append("%s: %d payloads differ from what %s sent (seq %s)"
                            % (self.user, len(bad), peer_name, bad[:5]))
        if self.rx_errors:
            problems.append("%s: %d packets failed to unprotect, e.g. %s"
                            % (self.user, len(self.rx_errors), self.rx_errors[0]))
        return problems


    # --- sending through the impairment, RTCP ---

    def _out(self, packet):
        """Sends one plain RTP packet, protected. Without RTCP or an
        impairment exactly as before; with RTCP it is counted for the SR
        (a packet the impairment loses too: the phone sent it, the network
        lost it); with an impairment it may be lost or leave late."""
        if self.rtcp_interval is None and self.impair is None:
            self.sock.sendto(self.tx.protect(packet), self.dest)
            return
        now = time.monotonic()
        with self.stats_lock:
            self.tx_packets += 1
            self.tx_octets += len(packet) - 12 - 4 * (packet[0] & 0x0F)
            self.tx_last = (struct.unpack("!I", packet[4:8])[0], now)
        if self.impair is None:
            self.sock.sendto(self.tx.protect(packet), self.dest)
            return
        lost, delay = self.impair.draw(struct.unpack("!H", packet[2:4])[0])
        if not lost:
            self.outq.put((now + delay, self.tx.protect(packet)))

    def _delayer(self):
        """Sends the impaired packets when they are due, in order."""
        while True:
            item = self.outq.get()
            if item is None:
                self.outq.task_done()
                return
            due, data = item
            time.sleep(max(0.0, due - time.monotonic()))
            try:
                self.sock.sendto(data, self.dest)
            except OSError:
                pass
            self.outq.task_done()

    def _drain(self):
        """Waits until every packet the impairment holds back has left."""
        if self.impair is not None:
            self.outq.join()

    def rtcp_pause(self):
        """Sends no more reports (a phone that is hanging up)."""
        self.rtcp_paused.set()

    def rtcp_report(self):
        """Our compound RTCP packet as of now, plain: an SR once we have
        sent RTP (else an RR), with a report block about the stream we have
        received most of, then an SDES CNAME."""
        now = time.monotonic()
        with self.stats_lock:
            blocks = []
            if self.sources:
                ssrc = max(self.sources, key=lambda x: self.sources[x].received)
                blocks.append(self.sources[ssrc].block(ssrc, self.last_sr.get(ssrc), now))
            if self.tx_last is not None:
                ts, at = self.tx_last
                first = rtcp_sr(self.ssrc, ntp_now(), ts + int((now - at) * CLOCK), self.tx_packets,
                                self.tx_octets, blocks)
            else:
                first = rtcp_rr(self.ssrc, blocks)
        return first + rtcp_sdes_cname(self.ssrc, ("%s@sipua" % self.user).encode())

    def _rtcp_sender(self):
        t0 = time.monotonic() + self.rtcp_phase
        k = 0
        while not self.stop.wait(max(0.0, t0 + k * self.rtcp_interval - time.monotonic())):
            k += 1
            if self.rtcp_paused.is_set():
                continue
            plain = self.rtcp_report()
            self.rtcp_sent.append(plain)
            try:
                muxed = self.rtcp_sock is None or self.rtcp_dest == self.dest
                (self.sock if muxed else self.rtcp_sock).sendto(self.tx.protect_rtcp(plain), self.rtcp_dest)
            except OSError:
                return

    def _rtcp_receive(self):
        self.rtcp_sock.settimeout(0.1)
        while not self.stop.is_set():
            try:
                data, src = self.rtcp_sock.recvfrom(2048)
            except socket.timeout:
                continue
            except OSError:
                return
            self._rtcp_in(data, src)

    def _rtcp_in(self, data, src):
        """An SRTCP packet arrived: unprotected, parsed, an SR's LSR kept."""
        arrival = time.monotonic()
        try:
            packets = rtcp_parse(self.rx.unprotect_rtcp(data))
        except Exception as e:  # pylibsrtp.Error, ValueError
            self.rtcp_errors.append("%s (%d bytes from %s)" % (e, len(data), src))
            return
        with self.stats_lock:
            for p in packets:
                if p["pt"] == 200:
                    lsr = ((p["ntp_sec"] & 0xFFFF) << 16) | (p["ntp_frac"] >> 16)
                    self.last_sr[p["ssrc"]] = (lsr, arrival)
        self.rtcp_got.append((arrival, packets))

    def close(self):
        self.stop.set()
        if hasattr(self, "outq"):
            self.outq.put(None)
        if hasattr(self, "rx_thread"):
            self.rx_thread.join(1)
        for t in getattr(self, "threads", ()):
            t.join(1)
        self.sock.close()
        if self.rtcp_sock is not None:
            self.rtcp_sock.close()


class CallFailed(Exception):
    def __init__(self, response):
        super().__init__("INVITE got " + response.first)
        self.response = response


class Dialog:
    def __init__(self, **kw):
        self.__dict__.update(kw)


class SipUA:
    def __init__(self, user, proxy, ip="127.0.0.1", codecs=(0, 8), netns=None, srtp=True,
                 rtcp_interval=None, rtcp_phase=0.0, impair=None):
        """rtcp_interval, rtcp_phase, impair: RTCP and an impairment of the
        RTP it sends (see Media); off by default."""
        self.user, self.proxy, self.ip = user, proxy, ip
        self.rtcp_interval, self.rtcp_phase, self.impair = rtcp_interval, rtcp_phase, impair
        self.codecs = codecs  # payload types offered or answered: 0 PCMU, 8 PCMA
        self.srtp = srtp  # offers SDES-SRTP (else plain RTP)
        self.netns = netns  # its sockets are made in this network namespace
        with inside(netns):
            self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind((ip, 0))
        self.port = self.sock.getsockname()[1]
        self.contact = "<sip:%s@%s:%d>" % (user, ip, self.port)
        self.inbox = queue.Queue()
        self.log = []        # (direction, first line) of everything, for failure messages
        self.byes = queue.Queue()
        self.dialog = None
        self.media = None
        self.closed = False
        threading.Thread(target=self._receive, daemon=True).start()

    def aor(self, user=None):
        return "sip:%s@%s:%d" % (user or self.user, self.proxy[0], self.proxy[1])

    # --- transport ---

    def send(self, data, dest):
        self.log.append(("out", data.split(b"\r\n", 1)[0].decode()))
        self.sock.sendto(data, dest)

    def _receive(self):
        while not self.closed:
            try:
                data, src = self.sock.recvfrom(65535)
            except OSError:
                return
            if not data.strip():
                continue  # keepalive
            msg = SipMessage.parse(data)
            msg.source = src
            self.log.append(("in", msg.first))
            if msg.is_request and msg.method == "BYE":
                # Noted before the 200 leaves: the caller checks for it as
                # soon as the 200 reaches it.
                self.byes.put(msg)
                self.respond(msg, 200, "OK")
            elif msg.is_request and msg.method == "ACK" and self.dialog is not None:
                self.dialog.acked.set()
            elif msg.is_request and msg.method == "INVITE" and self.dialog is not None \
                    and msg.get("call-id") == self.dialog.call_id:
                continue  # retransmission of the INVITE we are answering
            else:
                self.inbox.put(msg)

    def wait(self, pred, timeout, what):
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("%s: no %s within %.1f s; seen: %s" % (self.user, what, timeout, self.log))
            try:
                msg = self.inbox.get(timeout=left)
            except queue.Empty:
                continue
            if pred(msg):
                return msg

    def final_response(self, call_id, cseq, timeout=5.0):
        def match(m):
            return not m.is_request and m.get("call-id") == call_id and m.get("cseq") == cseq \
                and m.status >= 200
        return self.wait(match, timeout, "final response to %s" % cseq)

    # --- requests ---

    def request(self, method, ruri, headers, body=b"", dest=None, branch=None):
        """Sends a request; returns its Via branch."""
        branch = branch or "z9hG4bK" + random_token()
        lines = ["%s %s SIP/2.0" % (method, ruri),
                 "Via: SIP/2.0/UDP %s:%d;branch=%s;rport" % (self.ip, self.port, branch),
                 "Max-Forwards: 70"] + headers
        lines += ["User-Agent: srtpgate-e2e-sipua", "Content-Length: %d" % len(body), "", ""]
        self.send(("\r\n".join(lines)).encode() + body, dest or self.proxy)
        return branch

    def register(self, timeout=5.0):
        call_id, cseq = random_token() + "@" + self.ip, "1 REGISTER"
        self.request("REGISTER", "sip:%s:%d" % self.proxy, [
            "From: <%s>;tag=%s" % (self.aor(), random_token()),
            "To: <%s>" % self.aor(),
            "Call-ID: " + call_id, "CSeq: " + cseq,
            "Contact: %s;expires=300" % self.contact, "Expires: 300"])
        resp = self.final_response(call_id, cseq, timeout)
        if resp.status != 200:
            raise RuntimeError("%s: REGISTER got %s" % (self.user, resp.first))

    def _route_headers(self, d):
        return ["Route: " + r for r in d.route_set]

    def _next_hop(self, d):
        # Loose routing: with a route set, the first Route (Kamailio) gets the request.
        return hostport_of(uri_of(d.route_set[0])) if d.route_set else hostport_of(d.remote_target)

    def call(self, callee, with_ice=True, timeout=10.0):
        """Places a call to `callee` (user name at the proxy); returns the dialog
        once the 200 is ACKed."""
        self.media = self._new_media()
        port = self.media.sock.getsockname()[1]
        keys = [(1, "AES_CM_128_HMAC_SHA1_80"), (2, "AES_CM_128_HMAC_SHA1_32")] if self.srtp else []
        offered = {tag: (suite, new_key(suite)) for tag, suite in keys}
        sdp = make_sdp(self.user, self.ip, port,
                       [crypto_line(t, s, k) for t, (s, k) in offered.items()], with_ice, self.codecs)
        d = Dialog(call_id=random_token() + "@" + self.ip, local_tag=random_token(),
                   local_uri=self.aor(), remote_uri=self.aor(callee), cseq=1,
                   local_sdp=Sdp(sdp), offered=offered, acked=threading.Event())
        self.dialog = d
        invite_cseq = "1 INVITE"
        headers = ["From: <%s>;tag=%s" % (d.local_uri, d.local_tag), "To: <%s>" % d.remote_uri,
                   "Call-ID: " + d.call_id]
        branch = self.request("INVITE", d.remote_uri, headers + [
            "CSeq: " + invite_cseq, "Contact: " + self.contact,
            "Content-Type: application/sdp"], sdp)
        resp = self.final_response(d.call_id, invite_cseq, timeout)
        if resp.status != 200:
            # The ACK for a negative final response belongs to the INVITE
            # transaction: same branch and R-URI, hop-by-hop to the proxy.
            self.request("ACK", d.remote_uri, headers[:1] + ["To: " + resp.get("to")] + headers[2:]
                         + ["CSeq: 1 ACK"], branch=branch)
            raise CallFailed(resp)
        d.remote_tag = tag_of(resp.get("to"))
        d.to_header = resp.get("to")
        d.route_set = list(reversed(resp.all("record-route")))
        d.remote_target = uri_of(resp.get("contact"))
        d.remote_sdp = Sdp(resp.body)
        d.invite_response = resp
        self.request("ACK", d.remote_target, [
            "From: <%s>;tag=%s" % (d.local_uri, d.local_tag), "To: " + d.to_header,
            "Call-ID: " + d.call_id, "CSeq: 1 ACK"] + self._route_headers(d),
            dest=self._next_hop(d))
        if self.srtp:
            # The answerer picked one of our crypto lines (same tag) and gave its key.
            if not d.remote_sdp.crypto:
                raise RuntimeError("%s: an SRTP offer got an answer without keys:\n%s"
                                   % (self.user, d.remote_sdp.raw))
            tag, suite, key, _, _ = d.remote_sdp.crypto[0]
            d.tx = offered[tag]
            d.rx = (suite, key)
        else:
            d.tx = d.rx = (None, None)
        d.acked.set()
        return d

    def answer(self, timeout=10.0, reject=None):
        """Waits for an INVITE, answers it (180, 200 with SDES answer), waits for
        the ACK. With reject=(code, reason), answers 180 then that instead."""
        inv = self.wait(lambda m: m.is_request and m.method == "INVITE", timeout, "INVITE")
        if reject:
            self.dialog = Dialog(call_id=inv.get("call-id"), acked=threading.Event())
            tag = random_token()
            self.respond(inv, 180, "Ringing", to_tag=tag)
            self.respond(inv, reject[0], reject[1], to_tag=tag)
            if not self.dialog.acked.wait(timeout):
                raise TimeoutError("%s: no ACK for %d; seen: %s" % (self.user, reject[0], self.log))
            return None
        remote_sdp = Sdp(inv.body)
        if self.srtp:
            choice = next(((t, s, k) for t, s, k, _, _ in remote_sdp.crypto if s in SUITES), None)
            if choice is None:
                self.respond(inv, 488, "Not Acceptable Here")
                raise RuntimeError("%s: no usable crypto in offer:\n%s" % (self.user, remote_sdp.raw))
            tag, suite, peer_key = choice
            my_key = new_key(suite)
            crypto = [crypto_line(tag, suite, my_key)]
        elif remote_sdp.proto != "RTP/AVP" or remote_sdp.crypto:
            self.respond(inv, 488, "Not Acceptable Here")
            raise RuntimeError("%s: plain RTP only, offered:\n%s" % (self.user, remote_sdp.raw))
        else:
            suite = my_key = peer_key = None
            crypto = []
        self.media = self._new_media()
        sdp = make_sdp(self.user, self.ip, self.media.sock.getsockname()[1], crypto, codecs=self.codecs)
        d = Dialog(call_id=inv.get("call-id"), local_tag=random_token(),
                   local_uri=uri_of(inv.get("to")), remote_uri=uri_of(inv.get("from")),
                   remote_tag=tag_of(inv.get("from")), from_header=inv.get("from"),
                   route_set=inv.all("record-route"), remote_target=uri_of(inv.get("contact")),
                   cseq=100, local_sdp=Sdp(sdp), remote_sdp=remote_sdp, invite=inv,
                   tx=(suite, my_key), rx=(suite, peer_key), acked=threading.Event())
        self.dialog = d
        self.respond(inv, 180, "Ringing", to_tag=d.local_tag)
        self.respond(inv, 200, "OK", to_tag=d.local_tag, body=sdp,
                     extra=["Contact: " + self.contact, "Content-Type: application/sdp"])
        if not d.acked.wait(timeout):
            raise TimeoutError("%s: no ACK for 200; seen: %s" % (self.user, self.log))
        return d

    def respond(self, req, code, reason, to_tag=None, body=b"", extra=()):
        to = req.get("to")
        if to_tag and not tag_of(to):
            to += ";tag=" + to_tag
        lines = ["SIP/2.0 %d %s" % (code, reason)]
        lines += ["Via: " + v for v in req.all("via")]
        if req.method == "INVITE" and 100 < code < 300:
            lines += ["Record-Route: " + r for r in req.all("record-route")]
        lines += ["From: " + req.get("from"), "To: " + to, "Call-ID: " + req.get("call-id"),
                  "CSeq: " + req.get("cseq")] + list(extra)
        lines += ["Content-Length: %d" % len(body), "", ""]
        # Responses go back where the request came from (rport-style).
        self.send("\r\n".join(lines).encode() + body, req.source)

    def bye(self, timeout=5.0):
        d = self.dialog
        d.cseq += 1
        cseq = "%d BYE" % d.cseq
        if hasattr(d, "to_header"):   # we called
            from_, to = "<%s>;tag=%s" % (d.local_uri, d.local_tag), d.to_header
        else:                         # we answered
            from_, to = "<%s>;tag=%s" % (d.local_uri, d.local_tag), d.from_header
        self.request("BYE", d.remote_target, [
            "From: " + from_, "To: " + to, "Call-ID: " + d.call_id, "CSeq: " + cseq]
            + self._route_headers(d), dest=self._next_hop(d))
        return self.final_response(d.call_id, cseq, timeout)

    def in_dialog(self, method, extra=(), body=b"", timeout=5.0):
        """Sends an in-dialog request of the call (INFO, MESSAGE, ...) along
        its route set, with `extra` headers and `body`; returns its final
        response (from the far end, or from a proxy that answers it)."""
        d = self.dialog
        d.cseq += 1
        cseq = "%d %s" % (d.cseq, method)
        to = d.to_header if hasattr(d, "to_header") else d.from_header
        self.request(method, d.remote_target, [
            "From: <%s>;tag=%s" % (d.local_uri, d.local_tag), "To: " + to,
            "Call-ID: " + d.call_id, "CSeq: " + cseq] + self._route_headers(d) + list(extra),
            body, dest=self._next_hop(d))
        return self.final_response(d.call_id, cseq, timeout)

    # --- media ---

    def _rtp_socket(self):
        with inside(self.netns):
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        s.bind((self.ip, 0))
        return s

    def _rtcp_pair(self):
        """An RTP socket on an even port and its RTCP socket on the next one,
        as a phone that does RTCP (without a=rtcp in its SDP) needs."""
        for _ in range(200):
            rtp = self._rtp_socket()
            port = rtp.getsockname()[1]
            if port % 2 == 0 and port < 65535:
                with inside(self.netns):
                    rtcp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                try:
                    rtcp.bind((self.ip, port + 1))
                    return rtp, rtcp
                except OSError:
                    rtcp.close()
            rtp.close()
        raise RuntimeError("%s: no free pair of UDP ports for RTP and RTCP" % self.user)

    def _new_media(self):
        if self.rtcp_interval is None:
            return Media(self._rtp_socket(), self.user, impair=self.impair)
        rtp, rtcp = self._rtcp_pair()
        return Media(rtp, self.user, rtcp_sock=rtcp, rtcp_interval=self.rtcp_interval,
                     rtcp_phase=self.rtcp_phase, impair=self.impair)

    def start_media(self):
        d = self.dialog
        self.media.start(d.tx[0], d.tx[1], d.rx[0], d.rx[1],
                         (d.remote_sdp.addr, d.remote_sdp.port), d.remote_sdp.rtcp_dest())

    def close(self):
        self.closed = True
        if self.media:
            self.media.close()
        self.sock.close()


def demo(proxy):
    """Manual smoke test: `python3 sipua.py 127.0.0.1:5060` calls bob from alice."""
    alice, bob = SipUA("alice", proxy), SipUA("bob", proxy)
    alice.register(); bob.register()
    t = threading.Thread(target=bob.answer)
    t.start()
    d = alice.call("bob")
    t.join()
    print("alice got:\n" + d.remote_sdp.raw + "\nbob got:\n" + bob.dialog.remote_sdp.raw)
    print("BYE ->", alice.bye().first)
    alice.close(); bob.close()


if __name__ == "__main__":
    import sys
    host, _, port = sys.argv[1].rpartition(":")
    demo((host, int(port)))


def connect(alice, bob, **answer_kw):
    """Registers both phones, lets bob answer (with answer_kw, e.g. reject=486)
    in a thread while alice calls him, and returns what bob's side raised (a
    list, empty when all went well). alice's CallFailed propagates."""
    alice.register()
    bob.register()
    errors = []

    def answer():
        try:
            bob.answer(**answer_kw)
        except Exception as e:  # reported to the caller, in its thread
            errors.append(e)
    t = threading.Thread(target=answer, daemon=True)
    t.start()
    try:
        alice.call(bob.user)
    finally:
        t.join(10)
    return errors


def exchange(alice, bob, packets, interval=0.02, tones=None, settle=2.0, bob_leads=0.0):
    """Media both ways at once through the relay once the call is up: each
    phone sends `packets` packets (its own checkable payload, or with
    tones=((pt alice sends, hz, pt bob gets), (pt bob sends, hz, pt alice
    gets)) a G.711 tone) and checks what came from the other, waiting up to
    `settle` s for the last packets in flight; bob starts `bob_leads` s
    before alice. Returns the problems, [] if none."""
    alice.start_media()
    bob.start_media()
    if tones:
        (a_pt, a_hz, b_gets), (b_pt, b_hz, a_gets) = tones
        jobs = [(alice.media.send_tone, (packets, a_pt, a_hz, interval)),
                (bob.media.send_tone, (packets, b_pt, b_hz, interval))]

        def problems():
            return (bob.media.check_tone(alice.user, packets, b_gets, a_hz)
                    + alice.media.check_tone(bob.user, packets, a_gets, b_hz))
    else:
        jobs = [(ua.media.send, (packets, interval)) for ua in (alice, bob)]

        def problems():
            return alice.media.check(bob.user, packets) + bob.media.check(alice.user, packets)
    senders = [threading.Thread(target=f, args=a) for f, a in jobs]
    senders[1].start()
    time.sleep(bob_leads)
    senders[0].start()
    for t in senders:
        t.join()
    deadline = time.monotonic() + settle
    while True:
        found = problems()
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.05)
