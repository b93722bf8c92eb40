#!/usr/bin/env python3
"""Independent re-computation of every vector in tests/vectors/*.json.

Uses only the `cryptography` package (raw AES-ECB/CTR and AESGCM). Nothing
here shares code with the Rust implementation; it is written from the RFC
text:

  * RFC 3711 section 4.3.3  AES-CM PRF key derivation (also RFC 6188 s.2 for
                            the AES-192 / AES-256 PRFs: same construction,
                            longer master key)
  * RFC 3711 section 4.1.1  AES counter mode keystream
  * RFC 3711 section 4.1.2  AES-f8
  * RFC 7714 section 8      SRTP AEAD (8.1 IV, 8.2 AAD/plaintext)
  * RFC 7714 section 9      SRTCP AEAD (9.1 IV, 9.2 encrypted, 9.3 unencrypted)

Prints one line per check ("ok"/"FAIL", a failure with what differs), then
one summary line, and exits 1 on any failure. With -q only the failures and
the summary are printed (what scripts/test.sh shows). A vector that cannot
be checked at all (a missing field, a malformed value) is a failure too,
named, and the other vectors are still checked.
Run:  python3 tests/vectors/check.py [-q]   (needs `pip install cryptography`)
"""
import argparse
import json
import os
import sys
import traceback

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

HERE = os.path.dirname(os.path.abspath(__file__))
CHECKS = 0
FAILED = []
QUIET = False


def report(name, ok, detail=""):
    """One check's result; `detail` says, for a failure, what differs."""
    global CHECKS
    CHECKS += 1
    if not ok:
        FAILED.append(name)
    if ok and QUIET:
        return
    print(f"{'ok  ' if ok else 'FAIL'}  {name}{('  -- ' + detail) if detail else ''}", flush=True)


def differs(got, want):
    """What differs between two byte strings, for a failure line."""
    first = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
    lengths = "" if len(got) == len(want) else f", {len(got)} octets, want {len(want)}"
    return f"got {got.hex()}, want {want.hex()} (first difference at octet {first}{lengths})"


def same(name, got, want):
    """Reports whether `got` is the expected `want` (bytes)."""
    report(name, got == want, "" if got == want else differs(got, want))


def protects_as_given(name, v, iv, got, prot):
    """Whether a protection computed here has the vector's IV (where it
    gives one) and protected bytes; reports the first that differs."""
    if "iv" in v and iv != unhex(v["iv"]):
        report(name, False, f"IV: {differs(iv, unhex(v['iv']))}")
        return False
    if got != prot:
        report(name, False, f"protect: {differs(got, prot)}")
        return False
    return True


def guarded(name, check, *args):
    """Runs one vector's checks; an exception (a missing field, a malformed
    value, a bug here) fails that vector by name, and the others still run."""
    try:
        check(*args)
    except Exception as e:  # noqa: BLE001 -- every error is this vector's failure
        where = traceback.extract_tb(e.__traceback__)[-1]
        report(name, False, f"could not be checked: {type(e).__name__}: {e} (check.py line {where.lineno})")


def unhex(s):
    return bytes.fromhex(s)


def load(name):
    with open(os.path.join(HERE, name)) as f:
        return json.load(f)


# --------------------------------------------------------------------------
# primitives
# --------------------------------------------------------------------------
def aes_ecb(key, block):
    enc = Cipher(algorithms.AES(key), modes.ECB()).encryptor()
    return enc.update(block) + enc.finalize()


def aes_ctr_keystream(key, iv16, nbytes):
    """AES-CM keystream: E(k, IV), E(k, IV+1), ... (128-bit big-endian add)."""
    enc = Cipher(algorithms.AES(key), modes.CTR(iv16)).encryptor()
    return enc.update(b"\x00" * nbytes) + enc.finalize()


def add_counter(iv16, n):
    return ((int.from_bytes(iv16, "big") + n) % (1 << 128)).to_bytes(16, "big")


def xor(a, b):
    assert len(a) == len(b)
    return bytes(x ^ y for x, y in zip(a, b))


# --------------------------------------------------------------------------
# RFC 3711 4.3.3 AES-CM PRF key derivation
# --------------------------------------------------------------------------
def kdf_prf_input(master_salt, label, index, kdr):
    """x = key_id XOR master_salt, key_id = label || r, r = index DIV kdr
    (r is 48 bits for SRTP labels 0..2; the XOR is right-aligned so the label
    octet lands on octet 7 of the 14-octet salt).  Returns IV = x * 2^16."""
    assert len(master_salt) == 14, "AES-CM PRF takes a 112-bit master salt"
    r = 0 if kdr == 0 else index // kdr
    key_id = (label << 48) | (r & ((1 << 48) - 1))
    x = int.from_bytes(master_salt, "big") ^ key_id
    return (x << 16).to_bytes(16, "big")


def kdf(master_key, master_salt, label, index, kdr, nbytes):
    iv = kdf_prf_input(master_salt, label, index, kdr)
    return iv, aes_ctr_keystream(master_key, iv, nbytes)


def gcm_master_salt_to_prf_salt(salt96):
    """RFC 7714 erratum 4938: the 96-bit AEAD master salt is multiplied by
    2^16 (two zero octets appended) to form the 112-bit PRF master salt."""
    assert len(salt96) == 12
    return salt96 + b"\x00\x00"


def check_kdf():
    for v in load("kdf.json"):
        guarded(f"kdf  {v.get('source', '?')} {v.get('prf', '?')}", check_kdf_vector, v)


def check_kdf_vector(v):
    mk, ms = unhex(v["master_key"]), unhex(v["master_salt"])
    assert len(mk) * 8 == int(v["prf"].split("-")[1]), f"a {len(mk) * 8}-bit master key for {v['prf']}"
    for o in v["outputs"]:
        want = unhex(o["hex"])
        iv, got = kdf(mk, ms, o["label"], v["index"], v["kdr"], len(want))
        ok = got == want
        detail = "" if ok else differs(got, want)
        if "aes_input" in o and unhex(o["aes_input"]) != iv:
            ok, detail = False, f"PRF input: {differs(iv, unhex(o['aes_input']))}"
        report(f"kdf  {v['source']} {v['prf']} label {o['label']} ({o['name']}, {len(want)} octets)",
               ok, detail)


# --------------------------------------------------------------------------
# RFC 3711 4.1.1 AES-CM keystream
# --------------------------------------------------------------------------
def srtp_cm_iv(session_salt14, ssrc, index):
    """IV = (k_s * 2^16) XOR (SSRC * 2^64) XOR (i * 2^16)."""
    s = int.from_bytes(session_salt14, "big") << 16
    return (s ^ (ssrc << 64) ^ (index << 16)).to_bytes(16, "big")


def check_aes_cm():
    for v in load("aes_cm.json"):
        guarded(f"aes_cm {v.get('source', '?')}", check_aes_cm_vector, v)


def check_aes_cm_vector(v):
    key, iv = unhex(v["key"]), unhex(v["iv"])
    if "session_salt" in v:
        idx = (v.get("roc", 0) << 16) | v.get("seq", 0)
        built = srtp_cm_iv(unhex(v["session_salt"]), v.get("ssrc", 0), idx)
        same(f"aes_cm {v['source']} IV from salt/SSRC/index", built, iv)
    for seg in v["segments"]:
        want = unhex(seg["hex"])
        got = aes_ctr_keystream(key, add_counter(iv, seg["block"]), len(want))
        same(f"aes_cm {v['source']} AES-{len(key) * 8} blocks {seg['block']}..{seg['block'] + len(want) // 16 - 1}",
             got, want)
    if "segment_length_blocks" in v:
        # the whole printed segment, to be sure the last segment is where we think
        n = v["segment_length_blocks"]
        full = aes_ctr_keystream(key, iv, n * 16)
        last = unhex(v["segments"][-1]["hex"])
        same(f"aes_cm {v['source']} last segment ends the {n}-block keystream", full[-len(last):], last)


# --------------------------------------------------------------------------
# RFC 3711 4.1.2 AES-f8
# --------------------------------------------------------------------------
def f8_keystream(key, salt, iv, nbytes):
    m = salt + b"\x55" * (len(key) - len(salt))          # m = k_s || 0x555..5
    iv_prime = aes_ecb(xor(key, m), iv)                  # IV' = E(k_e XOR m, IV)
    out, s, j = b"", b"\x00" * 16, 0                     # S(-1) = 0
    blocks = []
    while len(out) < nbytes:
        s = aes_ecb(key, xor(xor(iv_prime, j.to_bytes(16, "big")), s))
        blocks.append(s)
        out += s
        j += 1
    return m, iv_prime, blocks, out[:nbytes]


def check_f8():
    for v in load("f8.json"):
        guarded(f"f8   {v.get('source', '?')}", check_f8_vector, v)


def check_f8_vector(v):
    key, salt, hdr = unhex(v["key"]), unhex(v["salt"]), unhex(v["rtp_header"])
    # IV = 0x00 || M || PT || SEQ || TS || SSRC || ROC  (RFC 3711 4.1.2.2)
    iv = b"\x00" + hdr[1:12] + v["roc"].to_bytes(4, "big")
    same(f"f8   {v['source']} IV from header and ROC", iv, unhex(v["iv"]))
    pt, ct = unhex(v["plaintext"]), unhex(v["ciphertext"])
    m, iv_prime, blocks, ks = f8_keystream(key, salt, iv, len(pt))
    if "key_mask" in v:
        same(f"f8   {v['source']} key-mask m", m, unhex(v["key_mask"]))
    if "masked_key" in v:
        same(f"f8   {v['source']} key XOR m", xor(key, m), unhex(v["masked_key"]))
    same(f"f8   {v['source']} IV'", iv_prime, unhex(v["iv_prime"]))
    for j, sb in enumerate(v.get("s_blocks", [])):
        same(f"f8   {v['source']} S({j})", blocks[j] if j < len(blocks) else b"", unhex(sb))
    same(f"f8   {v['source']} ciphertext", xor(pt, ks), ct)
    same(f"f8   {v['source']} decrypt", xor(ct, ks), pt)


# --------------------------------------------------------------------------
# RFC 7714 AES-GCM SRTP / SRTCP
# --------------------------------------------------------------------------
TAG = 16


def rtp_header_len(pkt):
    """RFC 3550 5.1/5.3.1: 12 + 4*CC, plus 4 + 4*length if X is set."""
    cc, x = pkt[0] & 0x0F, (pkt[0] >> 4) & 1
    n = 12 + 4 * cc
    if x:
        n += 4 + 4 * int.from_bytes(pkt[n + 2:n + 4], "big")
    return n


def srtp_gcm_iv(salt12, ssrc, roc, seq):
    """RFC 7714 8.1: (00 00 || SSRC || ROC || SEQ) XOR salt."""
    return xor(b"\x00\x00" + ssrc.to_bytes(4, "big") + roc.to_bytes(4, "big") + seq.to_bytes(2, "big"), salt12)


def srtcp_gcm_iv(salt12, ssrc, index31):
    """RFC 7714 9.1: (00 00 || SSRC || 00 00 || 0 || SRTCP index(31)) XOR salt."""
    return xor(b"\x00\x00" + ssrc.to_bytes(4, "big") + b"\x00\x00" + (index31 & 0x7FFFFFFF).to_bytes(4, "big"), salt12)


def srtp_protect(key, salt, roc, pkt, encrypt=True):
    ssrc, seq = int.from_bytes(pkt[8:12], "big"), int.from_bytes(pkt[2:4], "big")
    iv = srtp_gcm_iv(salt, ssrc, roc, seq)
    g = AESGCM(key)
    if encrypt:                 # 8.2: AAD = RTP header (incl. CSRC/ext), PT = payload
        hl = rtp_header_len(pkt)
        return iv, pkt[:hl] + g.encrypt(iv, pkt[hl:], pkt[:hl])
    # authentication only (16.1.3/16.2.3): whole packet is AAD, empty PT
    return iv, pkt + g.encrypt(iv, b"", pkt)


def srtp_unprotect(key, salt, roc, spkt, encrypt=True):
    ssrc, seq = int.from_bytes(spkt[8:12], "big"), int.from_bytes(spkt[2:4], "big")
    iv = srtp_gcm_iv(salt, ssrc, roc, seq)
    g = AESGCM(key)
    if encrypt:
        hl = rtp_header_len(spkt)
        return spkt[:hl] + g.decrypt(iv, spkt[hl:], spkt[:hl])
    body, tag = spkt[:-TAG], spkt[-TAG:]
    g.decrypt(iv, tag, body)            # raises InvalidTag
    return body


def srtcp_protect(key, salt, index, pkt, encrypt):
    ssrc = int.from_bytes(pkt[4:8], "big")
    iv = srtcp_gcm_iv(salt, ssrc, index)
    eword = (((1 << 31) if encrypt else 0) | (index & 0x7FFFFFFF)).to_bytes(4, "big")
    g = AESGCM(key)
    if encrypt:                 # 9.2: AAD = first 8 octets || ESRTCP word
        return iv, pkt[:8] + g.encrypt(iv, pkt[8:], pkt[:8] + eword) + eword
    # 9.3: AAD = whole RTCP packet || ESRTCP word, PT empty
    return iv, pkt + g.encrypt(iv, b"", pkt + eword) + eword


def srtcp_unprotect(key, salt, spkt):
    """Wire: header(8) || ciphertext || tag(16) || E|index(4)  (no MKI here)."""
    eword = spkt[-4:]
    e = eword[0] >> 7
    index = int.from_bytes(eword, "big") & 0x7FFFFFFF
    ssrc = int.from_bytes(spkt[4:8], "big")
    iv = srtcp_gcm_iv(salt, ssrc, index)
    g = AESGCM(key)
    body = spkt[:-4]
    if e:
        return e, index, body[:8] + g.decrypt(iv, body[8:], body[:8] + eword)
    rtcp, tag = body[:-TAG], body[-TAG:]
    g.decrypt(iv, tag, rtcp + eword)
    return e, index, rtcp


def check_packets():
    vectors = load("packets.json")
    by_source = {v["source"]: v for v in vectors if not v.get("derived")}
    for v in vectors:
        name = f"gcm  {v.get('source', '?')}"
        guarded(name, check_packet, name, v, by_source)


def check_packet(name, v, by_source):
    if v.get("derived"):
        # a derived negative must be its (printed, passing) base vector
        # with exactly one bit changed, and use the same keys
        base = by_source[v["derived_from"]]
        a, b = unhex(base["protected"]), unhex(v["protected"])
        same_keys = all(base[k] == v[k] for k in ("suite", "kind", "session_key", "session_salt"))
        bits = sum(bin(x ^ y).count("1") for x, y in zip(a, b)) if len(a) == len(b) else -1
        if not same_keys or bits != 1 or base["expect"] != "ok":
            report(name, False, f"not a one-bit change of {v['derived_from']} (bits={bits}, same keys={same_keys})")
            return
    key, salt = unhex(v["session_key"]), unhex(v["session_salt"])
    assert len(key) == (16 if v["suite"] == "AEAD_AES_128_GCM" else 32), f"a {len(key)}-octet key for {v['suite']}"
    pt, prot = unhex(v["plaintext"]), unhex(v["protected"])
    enc = v.get("encrypt", True)
    try:
        if v["kind"] == "rtp":
            if v["expect"] == "ok" and not protects_as_given(name, v, *srtp_protect(key, salt, v["roc"], pt, enc), prot):
                return
            back = srtp_unprotect(key, salt, v["roc"], prot, enc)
        else:
            if v["expect"] == "ok" and not protects_as_given(
                name, v, *srtcp_protect(key, salt, v["srtcp_index"], pt, enc), prot
            ):
                return
            e, index, back = srtcp_unprotect(key, salt, prot)
            if v["expect"] == "ok" and (e != int(enc) or index != v["srtcp_index"]):
                report(name, False, f"E={e} index={index:#x}, want E={int(enc)} index={v['srtcp_index']:#x}")
                return
    except InvalidTag:
        report(name, v["expect"] == "auth_fail",
               "authentication failed as expected" if v["expect"] == "auth_fail"
               else "authentication failed (InvalidTag) on a packet that should authenticate")
        return
    if v["expect"] == "auth_fail":
        report(name, False, "bad packet authenticated")
    else:
        report(name, back == pt, "" if back == pt else f"unprotect: {differs(back, pt)}")


def check_erratum_4938_shape():
    """Not an RFC vector: shows how erratum 4938 feeds a 96-bit salt to the
    PRF.  Checks the PRF input block for label 0 is salt96 || 00 00 || 00 00
    (i.e. the 12 salt octets left-aligned, NOT right-aligned)."""
    salt96 = unhex("517569642070726f2071756f")
    iv = kdf_prf_input(gcm_master_salt_to_prf_salt(salt96), 0, 0, 0)
    same("erratum 4938 PRF input layout (label 0) = salt96||0000||0000", iv, salt96 + b"\x00" * 4)
    iv2 = kdf_prf_input(gcm_master_salt_to_prf_salt(salt96), 2, 0, 0)
    want2 = bytearray(salt96 + b"\x00" * 4)
    want2[7] ^= 0x02
    same("erratum 4938 PRF input layout (label 2) label lands on octet 7", iv2, bytes(want2))


def check_stun():
    """RFC 5769: each message's MESSAGE-INTEGRITY (HMAC-SHA1 keyed with the
    short-term password over the message up to it, length field covering
    it) and FINGERPRINT (CRC-32 xor 0x5354554e over the message up to it)."""
    v = load("stun.json")
    for k in ("request", "response_ipv4", "response_ipv6"):
        guarded(f"RFC 5769 {k}", check_stun_message, v[k])


def check_stun_message(msg):
    import hmac, hashlib, struct, zlib
    m = unhex(msg["message"])
    at = 20
    # (computed, in the message) per attribute; None where it is absent
    mi = fp = None
    while at + 4 <= len(m):
        t, n = struct.unpack("!HH", m[at:at + 4])
        val = m[at + 4:at + 4 + n]
        if t == 0x0008:
            head = m[:2] + struct.pack("!H", at - 20 + 24) + m[4:at]
            mi = (hmac.new(msg["password"].encode(), head, hashlib.sha1).digest(), val)
        if t == 0x8028:
            head = m[:2] + struct.pack("!H", at - 20 + 8) + m[4:at]
            fp = (struct.pack("!I", zlib.crc32(head) ^ 0x5354554E), val)
        at += 4 + (n + 3) // 4 * 4
    for what, pair in (("MESSAGE-INTEGRITY", mi), ("FINGERPRINT", fp)):
        name = f"RFC 5769 {msg['section']} {what}"
        if pair is None:
            report(name, False, "attribute not in the message")
        else:
            same(name, *pair)


def main():
    global QUIET
    parser = argparse.ArgumentParser(description="Recomputes every vector in tests/vectors/*.json.")
    parser.add_argument("-q", "--quiet", action="store_true", help="print only the failures and the summary")
    QUIET = parser.parse_args().quiet
    for check in (check_stun, check_kdf, check_aes_cm, check_f8, check_packets, check_erratum_4938_shape):
        # A file that cannot be read or parsed fails its group, by name.
        guarded(f"{check.__name__} (its vector file)", check)
    if not QUIET or FAILED:
        print()
    if FAILED:
        print(f"vectors: {len(FAILED)} of {CHECKS} checks FAILED: {'; '.join(FAILED)}")
        return 1
    print(f"vectors: all {CHECKS} checks ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
