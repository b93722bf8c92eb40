"""SRTP/SRTCP interop: libsrtp (bench/libsrtp/srtp-tool) <-> srtpgate (`srtpgate packet`).

Every case runs for each suite and each (protector, unprotector) pair in
{libsrtp, ours} x {libsrtp, ours}.  Pairs involving `ours` skip (with the
reason printed) when SRTPGATE_BIN is unset or missing; the libsrtp->libsrtp
pair validates the tests themselves.

Run:  SRTP_TOOL=bench/libsrtp/srtp-tool SRTPGATE_BIN=target/release/srtpgate \
      python -m pytest tests/interop -q -rs
"""

from __future__ import annotations

import random
import subprocess
import zlib

import pytest

from conftest import (
    ERR_AUTH,
    ERR_REPLAY,
    IMPLS,
    LIBSRTP,
    OURS,
    SUITES,
    flip_bit,
    random_key,
    require_pair,
    rtcp_compound,
    rtp_header_len,
    rtp_packet,
    rtp_stream,
)

SUITE_NAMES = list(SUITES)
PAIRS = [("libsrtp", "libsrtp"), ("ours", "libsrtp"), ("libsrtp", "ours"), ("ours", "ours")]


@pytest.fixture
def rng(request) -> random.Random:
    # deterministic per test id, so failures are reproducible
    return random.Random(zlib.crc32(request.node.nodeid.encode()))


@pytest.fixture(params=SUITE_NAMES)
def suite(request) -> str:
    return request.param


@pytest.fixture(params=PAIRS, ids=[f"{p}->{u}" for p, u in PAIRS])
def pair(request, suite):
    p, u = IMPLS[request.param[0]], IMPLS[request.param[1]]
    require_pair(p, u, suite)
    return p, u


def is_null(suite: str) -> bool:
    return suite.startswith("NULL_")


def rtp_tag_len(suite: str) -> int:
    return SUITES[suite][2]


def rtcp_tag_len(suite: str) -> int:
    return SUITES[suite][3]


def assert_decrypts_to(out: list[str], expected: list[bytes | str], what: str = "packet") -> None:
    for i, (got, want) in enumerate(zip(out, expected)):
        want_s = want if isinstance(want, str) else want.hex()
        assert got == want_s, f"{what} {i}: expected {want_s[:80]}..., got {got[:80]}..."
    assert len(out) == len(expected)


def check_srtp_shape(suite: str, plain: list[bytes], prot: list[bytes]) -> None:
    for i, (p, s) in enumerate(zip(plain, prot)):
        assert len(s) == len(p) + rtp_tag_len(suite), f"packet {i}: wrong SRTP length"
        h = rtp_header_len(p)
        assert s[:h] == p[:h], f"packet {i}: RTP header must be sent in the clear"
        body = s[h : len(p)]
        if is_null(suite):
            assert body == p[h:], f"packet {i}: NULL cipher must not change the payload"
        elif len(body) >= 16:
            assert body != p[h:], f"packet {i}: payload not encrypted"


# --------------------------------------------------------------------------
# RTP


def test_normal_stream(pair, suite, rng):
    prot, unprot = pair
    key, _ = random_key(rng, suite)
    plain = rtp_stream(rng, 50)
    srtp = prot.protect(suite, key, plain)
    check_srtp_shape(suite, plain, srtp)
    out = unprot.run("unprotect", suite, key, srtp)
    assert_decrypts_to(out, plain)


def test_seq_wrap_increments_roc(pair, suite, rng):
    prot, unprot = pair
    key, _ = random_key(rng, suite)
    plain = rtp_stream(rng, 100, seq0=65500)
    srtp = prot.protect(suite, key, plain)
    check_srtp_shape(suite, plain, srtp)
    out = unprot.run("unprotect", suite, key, srtp)
    assert_decrypts_to(out, plain)

    # The packet with seq 0 was protected with ROC=1.  A fresh receiver that
    # sees it as its first packet assumes ROC=0 and must reject it, while a
    # pre-wrap packet (ROC=0) is accepted by a fresh receiver.
    first_after_wrap = 65536 - 65500
    assert int.from_bytes(plain[first_after_wrap][2:4], "big") == 0
    out = unprot.run("unprotect", suite, key, [srtp[first_after_wrap]])
    assert out == [ERR_AUTH], "protector did not increment the ROC at the wrap"
    out = unprot.run("unprotect", suite, key, [srtp[first_after_wrap - 1]])
    assert_decrypts_to(out, [plain[first_after_wrap - 1]])


def test_reorder_within_window(pair, suite, rng):
    prot, unprot = pair
    key, _ = random_key(rng, suite)
    plain = rtp_stream(rng, 80)
    srtp = prot.protect(suite, key, plain)
    # swap neighbours: 1,0,3,2,...
    order = []
    for i in range(0, 60, 2):
        order += [i + 1, i]
    # then delay packet 60 by 19 packets
    order += list(range(61, 80)) + [60]
    out = unprot.run("unprotect", suite, key, [srtp[i] for i in order])
    assert_decrypts_to(out, [plain[i] for i in order])


def test_replay(pair, suite, rng):
    prot, unprot = pair
    key, _ = random_key(rng, suite)
    plain = rtp_stream(rng, 20)
    srtp = prot.protect(suite, key, plain)
    seq = list(range(10)) + [9] + list(range(10, 20)) + [3, 19]
    expected = [p.hex() for p in plain[:10]] + [ERR_REPLAY] + [p.hex() for p in plain[10:]]
    expected += [ERR_REPLAY, ERR_REPLAY]
    out = unprot.run("unprotect", suite, key, [srtp[i] for i in seq])
    assert_decrypts_to(out, expected)


def test_replay_too_old_and_window(pair, suite, rng):
    prot, unprot = pair
    key, _ = random_key(rng, suite)
    plain = rtp_stream(rng, 300, payload_len=20)
    srtp = prot.protect(suite, key, plain)
    # packet 5 withheld, then delivered 294 packets late
    order = [i for i in range(300) if i != 5] + [5]
    # default window (libsrtp: 128) -> too old -> replayed
    out = unprot.run("unprotect", suite, key, [srtp[i] for i in order])
    assert_decrypts_to(out[:-1], [plain[i] for i in order[:-1]])
    assert out[-1] == ERR_REPLAY
    # with a 1024 window the late (never seen) packet is accepted
    out = unprot.run("unprotect", suite, key, [srtp[i] for i in order], window=1024)
    assert_decrypts_to(out, [plain[i] for i in order])
    # and a duplicate is still a replay with the large window
    out = unprot.run("unprotect", suite, key, [srtp[i] for i in order] + [srtp[100]], window=1024)
    assert out[-1] == ERR_REPLAY


@pytest.mark.parametrize("where", ["payload", "tag", "header"])
@pytest.mark.parametrize("victim", [0, 7])
def test_tampered_packet(pair, suite, rng, where, victim):
    prot, unprot = pair
    key, _ = random_key(rng, suite)
    ssrc, seq0 = rng.getrandbits(32), rng.randint(0, 60000)
    plain = [rtp_packet(rng, ssrc, seq0 + i, payload_len=rng.randint(1, 1200)) for i in range(20)]
    srtp = prot.protect(suite, key, plain)
    good = srtp[victim]
    h = rtp_header_len(plain[victim])
    if where == "payload":
        bad = flip_bit(good, rng.randint(h, len(plain[victim]) - 1), rng.randint(0, 7))
    elif where == "tag":
        bad = flip_bit(good, len(good) - 1, rng.randint(0, 7))
    else:
        bad = flip_bit(good, 1, 7)  # marker bit
    feed = srtp[:victim] + [bad, good] + srtp[victim + 1 :]
    expected = [p.hex() for p in plain[:victim]] + [ERR_AUTH] + [p.hex() for p in plain[victim:]]
    out = unprot.run("unprotect", suite, key, feed)
    assert_decrypts_to(out, expected)


def test_wrong_key(pair, suite, rng):
    prot, unprot = pair
    key, _ = random_key(rng, suite)
    other, _ = random_key(rng, suite)
    plain = rtp_stream(rng, 5)
    srtp = prot.protect(suite, key, plain)
    out = unprot.run("unprotect", suite, other, srtp)
    assert out == [ERR_AUTH] * 5


def test_several_ssrcs_interleaved(pair, suite, rng):
    prot, unprot = pair
    key, _ = random_key(rng, suite)
    streams = [rtp_stream(rng, 25) for _ in range(4)]
    # random merge that keeps each stream's own order
    queues = [list(s) for s in streams]
    plain = []
    while any(queues):
        q = rng.choice([q for q in queues if q])
        plain.append(q.pop(0))
    srtp = prot.protect(suite, key, plain)
    check_srtp_shape(suite, plain, srtp)
    out = unprot.run("unprotect", suite, key, srtp)
    assert_decrypts_to(out, plain)


# --------------------------------------------------------------------------
# RTCP


def test_srtcp(pair, suite, rng):
    prot, unprot = pair
    key, _ = random_key(rng, suite)
    ssrcs = [rng.getrandbits(32), rng.getrandbits(32)]
    plain = [rtcp_compound(rng, ssrcs[i % 2]) for i in range(10)]
    srtcp = prot.protect(suite, key, plain, rtcp=True)
    last_index = [0, 0]
    for i, (p, s) in enumerate(zip(plain, srtcp)):
        assert len(s) == len(p) + 4 + rtcp_tag_len(suite), f"rtcp {i}: wrong SRTCP length"
        assert s[:8] == p[:8], f"rtcp {i}: first 8 bytes must be in the clear"
        if suite.startswith("AEAD_"):
            # RFC 7714: ciphertext || tag || E+index (index after the tag)
            e_index = int.from_bytes(s[-4:], "big")
        else:
            # RFC 3711: ciphertext || E+index || tag
            e_index = int.from_bytes(s[len(p) : len(p) + 4], "big")
        index = e_index & 0x7FFFFFFF
        if i >= 2:  # per SSRC (they alternate) the SRTCP index goes up by one
            assert index == last_index[i % 2] + 1, f"rtcp {i}: SRTCP index not sequential"
        elif prot is LIBSRTP:
            assert index == 1, "libsrtp starts the SRTCP index at 1"
        last_index[i % 2] = index
        if not is_null(suite):
            assert e_index & 0x80000000, f"rtcp {i}: E flag not set"
            assert s[8 : len(p)] != p[8:], f"rtcp {i}: not encrypted"
    out = unprot.run("unprotect", suite, key, srtcp, rtcp=True)
    assert_decrypts_to(out, plain, "rtcp")

    # replay + tamper (tag and encrypted body) in one run
    # the tag is last for RFC 3711 suites; for AEAD (RFC 7714) the E+index
    # word follows the tag.  (Flipping the index instead would make libsrtp
    # report a replay: it checks the replay window before authenticating.)
    tag_end = len(srtcp[4]) - (4 if suite.startswith("AEAD_") else 0)
    bad_tag = flip_bit(srtcp[4], tag_end - 1)
    bad_body = flip_bit(srtcp[5], 12, 3)
    feed = srtcp[:4] + [bad_tag, srtcp[4], srtcp[4], bad_body, srtcp[5]] + srtcp[6:]
    expected = plain[:4] + [ERR_AUTH, plain[4], ERR_REPLAY, ERR_AUTH, plain[5]] + plain[6:]
    out = unprot.run("unprotect", suite, key, feed, rtcp=True)
    assert_decrypts_to(out, expected, "rtcp")


def test_srtcp_reordered(pair, suite, rng):
    prot, unprot = pair
    key, _ = random_key(rng, suite)
    ssrc = rng.getrandbits(32)
    plain = [rtcp_compound(rng, ssrc) for _ in range(8)]
    srtcp = prot.protect(suite, key, plain, rtcp=True)
    order = [1, 0, 3, 2, 5, 4, 7, 6]
    out = unprot.run("unprotect", suite, key, [srtcp[i] for i in order], rtcp=True)
    assert_decrypts_to(out, [plain[i] for i in order], "rtcp")


# --------------------------------------------------------------------------
# byte-for-byte equality of the protect side (SRTP is deterministic given
# key, packet and index).  Skipped unless both implementations are present.


def _both(suite):
    require_pair(LIBSRTP, OURS, suite)


def test_srtp_protect_identical(suite, rng):
    _both(suite)
    key, _ = random_key(rng, suite)
    plain = rtp_stream(rng, 30, seq0=65520) + rtp_stream(rng, 10)
    assert LIBSRTP.protect(suite, key, plain) == OURS.protect(suite, key, plain)


def test_srtcp_index_starts_at_zero(suite, rng):
    """RFC 3711 section 3.4: the SRTCP index is zero for the first packet and
    goes up by one per packet. (libsrtp starts at 1, so the two protect
    outputs cannot be byte-identical for SRTCP; both decrypt in the other.)
    The E flag is set only when the suite encrypts (not for NULL suites)."""
    OURS.require()
    key, _ = random_key(rng, suite)
    ssrc = rng.getrandbits(32)
    plain = [rtcp_compound(rng, ssrc) for _ in range(3)]
    srtcp = OURS.protect(suite, key, plain, rtcp=True)
    for i, (p, s) in enumerate(zip(plain, srtcp)):
        word = int.from_bytes(s[-4:] if suite.startswith("AEAD_") else s[len(p) : len(p) + 4], "big")
        assert word & 0x7FFFFFFF == i
        assert bool(word & 0x80000000) == (not is_null(suite))


# --------------------------------------------------------------------------
# line-contract details, per implementation


@pytest.fixture(params=["libsrtp", "ours"])
def impl(request):
    i = IMPLS[request.param]
    i.require()
    return i


def test_line_contract(impl, rng):
    suite = "AES_CM_128_HMAC_SHA1_80"
    key, _ = random_key(rng, suite)
    good = rtp_stream(rng, 3)
    # blank lines are ignored; bad hex and truncated packets give one error
    # line each and do not disturb the following packets
    feed = [good[0].hex(), "", "zz", "abc", good[1].hex(), "", "8000", good[2].hex()]
    proc = subprocess.run(
        impl.argv("protect", suite, key, False, None),
        input="\n".join(feed) + "\n\n",
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 6, lines
    assert all(not lines[i].startswith("error") for i in (0, 3, 5)), lines
    assert all(lines[i].startswith("error:") for i in (1, 2, 4)), lines
    assert all(c in "0123456789abcdef" for c in lines[0]), "output must be lowercase hex"
    out = LIBSRTP.run("unprotect", suite, key, [lines[0], lines[3], lines[5]])
    assert_decrypts_to(out, good)
    # uppercase hex input is accepted
    out = impl.run("protect", suite, key, [rtp_stream(rng, 1)[0].hex().upper()])
    assert not out[0].startswith("error")


def test_unsupported_suite_exit_2(impl):
    argv = impl.argv("protect", "NO_SUCH_SUITE", "AAAA", False, None)
    proc = subprocess.run(argv, input="", capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2
