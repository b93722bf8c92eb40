"""Shared helpers for the SRTP interop tests.

Two line-filter implementations are driven against each other:

* ``libsrtp`` -- bench/libsrtp/srtp-tool (env ``SRTP_TOOL``), a thin wrapper
  around Debian's libsrtp2;
* ``ours``    -- the Rust CLI (env ``SRTPGATE_BIN``), invoked as
  ``$SRTPGATE_BIN packet protect|unprotect --suite S --key K [--rtcp]
  [--replay-window N]``.

Both read one hex packet per line on stdin and write exactly one line per
non-empty input line: the resulting packet as lowercase hex, or ``error: ...``.
"""

from __future__ import annotations

import base64
import functools
import os
import random
import struct
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]

# SDES suite name -> (master key length, master salt length, RTP tag length,
# RTCP tag length).  _32 suites use an 80-bit SRTCP tag (libsrtp / RFC 4568
# convention); NULL suites use an AES-128 sized master key + salt.
SUITES = {
    "AES_CM_128_HMAC_SHA1_80": (16, 14, 10, 10),
    "AES_CM_128_HMAC_SHA1_32": (16, 14, 4, 10),
    "AES_192_CM_HMAC_SHA1_80": (24, 14, 10, 10),
    "AES_192_CM_HMAC_SHA1_32": (24, 14, 4, 10),
    "AES_256_CM_HMAC_SHA1_80": (32, 14, 10, 10),
    "AES_256_CM_HMAC_SHA1_32": (32, 14, 4, 10),
    "AEAD_AES_128_GCM": (16, 12, 16, 16),
    "AEAD_AES_256_GCM": (32, 12, 16, 16),
    "NULL_HMAC_SHA1_80": (16, 14, 10, 10),
    "NULL_HMAC_SHA1_32": (16, 14, 4, 10),
}

ERR_AUTH = "error: authentication failed"
ERR_REPLAY = "error: replayed packet"


# --------------------------------------------------------------------------
# the two implementations


def _libsrtp_path() -> Path:
    p = Path(os.environ.get("SRTP_TOOL", "bench/libsrtp/srtp-tool"))
    return p if p.is_absolute() else REPO_ROOT / p


def _ours_path() -> Path | None:
    v = os.environ.get("SRTPGATE_BIN")
    if not v:
        return None
    p = Path(v)
    return p if p.is_absolute() else (Path.cwd() / p)


def ours_unavailable_reason() -> str | None:
    p = _ours_path()
    if p is None:
        return "SRTPGATE_BIN is not set: tests involving the Rust CLI ('ours') are skipped"
    if not (p.is_file() and os.access(p, os.X_OK)):
        return f"SRTPGATE_BIN={p} does not exist or is not executable: tests involving 'ours' are skipped"
    return None


def libsrtp_unavailable_reason() -> str | None:
    p = _libsrtp_path()
    if not (p.is_file() and os.access(p, os.X_OK)):
        return f"libsrtp tool {p} not built (run: make -C bench/libsrtp) or SRTP_TOOL wrong"
    return None


def _libsrtp_version() -> tuple[int, int]:
    """The (major, minor) version of the libsrtp2 the C tool links against."""
    import ctypes
    import re

    try:
        lib = ctypes.CDLL("libsrtp2.so.1")
        lib.srtp_get_version_string.restype = ctypes.c_char_p
        found = re.findall(r"(\d+)\.(\d+)", lib.srtp_get_version_string().decode())
        return (int(found[0][0]), int(found[0][1])) if found else (0, 0)
    except OSError:
        return (0, 0)


# libsrtp before 2.8.0 derives AES-192 keys with an AES-256 PRF, against
# RFC 6188 (cisco/libsrtp#763). Against such a libsrtp our CLI runs the AES-192
# suites with --libsrtp-aes192-kdf; RFC 6188 derivation itself is checked by the
# RFC vectors in the Rust tests.
LEGACY_AES192 = _libsrtp_version() < (2, 8)


@dataclass(frozen=True)
class Impl:
    name: str

    def argv(self, mode: str, suite: str, key: str, rtcp: bool, window: int | None) -> list[str]:
        if self.name == "libsrtp":
            cmd = [str(_libsrtp_path()), mode]
        else:
            cmd = [str(_ours_path()), "packet", mode]
            if suite.startswith("AES_192_") and LEGACY_AES192:
                cmd.append("--libsrtp-aes192-kdf")
        cmd += ["--suite", suite, "--key", key]
        if rtcp:
            cmd.append("--rtcp")
        if window is not None:
            cmd += ["--replay-window", str(window)]
        return cmd

    def require(self) -> None:
        reason = libsrtp_unavailable_reason() if self.name == "libsrtp" else ours_unavailable_reason()
        if reason:
            print(f"SKIP: {reason}")
            pytest.skip(reason)

    def run(
        self,
        mode: str,
        suite: str,
        key: str,
        packets: list[bytes | str],
        rtcp: bool = False,
        window: int | None = None,
    ) -> list[str]:
        """Feed all packets at once; return the output lines (one per packet)."""
        lines = [p if isinstance(p, str) else p.hex() for p in packets]
        proc = subprocess.run(
            self.argv(mode, suite, key, rtcp, window),
            input="".join(line + "\n" for line in lines),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode == 0, (
            f"{self.name} {mode} exited {proc.returncode}: {proc.stderr.strip()}"
        )
        out = proc.stdout.splitlines()
        assert len(out) == len(lines), (
            f"{self.name} {mode}: {len(lines)} input lines but {len(out)} output lines"
        )
        return out

    def protect(self, suite, key, packets, **kw) -> list[bytes]:
        """Protect; every packet must succeed.  Returns the SRTP packets."""
        out = self.run("protect", suite, key, packets, **kw)
        for i, line in enumerate(out):
            assert not line.startswith("error"), f"{self.name} protect packet {i}: {line}"
        return [bytes.fromhex(line) for line in out]


LIBSRTP = Impl("libsrtp")
OURS = Impl("ours")
IMPLS = {"libsrtp": LIBSRTP, "ours": OURS}


@functools.lru_cache(maxsize=None)
def suite_support(impl_name: str, suite: str) -> str | None:
    """None if `impl` supports `suite`, else a reason string."""
    impl = IMPLS[impl_name]
    key = base64.b64encode(bytes(sum(SUITES[suite][:2]))).decode()
    proc = subprocess.run(
        impl.argv("protect", suite, key, False, None),
        input="",
        capture_output=True,
        text=True,
        timeout=30,
    )
    if proc.returncode != 0:
        return f"{impl_name} does not support {suite} (exit {proc.returncode}: {proc.stderr.strip()})"
    return None


def require_pair(protector: Impl, unprotector: Impl, suite: str) -> None:
    for impl in {protector, unprotector}:
        impl.require()
        reason = suite_support(impl.name, suite)
        if reason:
            print(f"SKIP: {reason}")
            pytest.skip(reason)


# --------------------------------------------------------------------------
# packet generation


def random_key(rng: random.Random, suite: str) -> tuple[str, bytes]:
    klen, slen = SUITES[suite][:2]
    raw = bytes(rng.getrandbits(8) for _ in range(klen + slen))
    return base64.b64encode(raw).decode(), raw


def rtp_packet(
    rng: random.Random,
    ssrc: int,
    seq: int,
    ts: int | None = None,
    payload_len: int | None = None,
    csrcs: int | None = None,
    extension: bool | None = None,
) -> bytes:
    """A random but well-formed RTP packet (version 2, no padding)."""
    if csrcs is None:
        csrcs = rng.choice([0, 0, 0, 1, 2, 3])
    if extension is None:
        extension = rng.random() < 0.3
    if payload_len is None:
        payload_len = rng.randint(0, 1200)
    if ts is None:
        ts = rng.getrandbits(32)
    marker = rng.getrandbits(1)
    pt = rng.randint(0, 127)
    b0 = 0x80 | (0x10 if extension else 0) | csrcs
    b1 = (marker << 7) | pt
    hdr = struct.pack("!BBHII", b0, b1, seq & 0xFFFF, ts & 0xFFFFFFFF, ssrc)
    for _ in range(csrcs):
        hdr += struct.pack("!I", rng.getrandbits(32))
    if extension:
        words = rng.randint(0, 3)
        hdr += struct.pack("!HH", 0xBEDE, words) + rng.randbytes(4 * words)
    return hdr + rng.randbytes(payload_len)


def rtp_stream(rng: random.Random, n: int, ssrc: int | None = None, seq0: int | None = None, **kw):
    ssrc = rng.getrandbits(32) if ssrc is None else ssrc
    seq0 = rng.randint(0, 65535 - n) if seq0 is None else seq0
    ts0 = rng.getrandbits(32)
    return [rtp_packet(rng, ssrc, seq0 + i, ts0 + 160 * i, **kw) for i in range(n)]


def rtp_header_len(pkt: bytes) -> int:
    cc = pkt[0] & 0x0F
    n = 12 + 4 * cc
    if pkt[0] & 0x10:
        (words,) = struct.unpack_from("!H", pkt, n + 2)
        n += 4 + 4 * words
    return n


def _rtcp(pt: int, count: int, body: bytes) -> bytes:
    assert len(body) % 4 == 0
    return struct.pack("!BBH", 0x80 | count, pt, (len(body) + 4) // 4 - 1) + body


def _report_block(rng: random.Random) -> bytes:
    return struct.pack("!I", rng.getrandbits(32)) + rng.randbytes(20)


def _sdes_cname(ssrc: int, cname: bytes) -> bytes:
    chunk = struct.pack("!I", ssrc) + bytes([1, len(cname)]) + cname + b"\x00"
    chunk += b"\x00" * (-len(chunk) % 4)
    return _rtcp(202, 1, chunk)


def rtcp_compound(rng: random.Random, ssrc: int) -> bytes:
    """SR or RR (with 0..3 report blocks) followed by an SDES CNAME."""
    blocks = [_report_block(rng) for _ in range(rng.randint(0, 3))]
    if rng.random() < 0.5:
        sender_info = rng.randbytes(8) + struct.pack("!III", *(rng.getrandbits(32) for _ in range(3)))
        first = _rtcp(200, len(blocks), struct.pack("!I", ssrc) + sender_info + b"".join(blocks))
    else:
        first = _rtcp(201, len(blocks), struct.pack("!I", ssrc) + b"".join(blocks))
    cname = f"user{rng.randint(0, 9999)}@host.example".encode()
    return first + _sdes_cname(ssrc, cname)


def flip_bit(pkt: bytes, byte_index: int, bit: int = 0) -> bytes:
    b = bytearray(pkt)
    b[byte_index] ^= 1 << bit
    return bytes(b)


# --------------------------------------------------------------------------
# pytest hooks


def pytest_terminal_summary(terminalreporter, exitstatus, config):  # noqa: ARG001
    reasons = [r for r in (ours_unavailable_reason(), libsrtp_unavailable_reason()) if r]
    if reasons:
        terminalreporter.section("srtp interop")
        for r in reasons:
            terminalreporter.write_line(r)
