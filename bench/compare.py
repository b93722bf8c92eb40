#!/usr/bin/env python3
"""Prints the Markdown comparison of `srtpgate-bench engines cpu --json` with the
libsrtp/OpenSSL figures of `srtp-tool bench --json` from the same run."""
import json
import platform
import sys


def load(path):
    with open(path) as f:
        return json.load(f)


def main(ours_path, ref_path, stamp):
    ours = load(ours_path)
    ref = load(ref_path)
    lib = {(r["suite"], r["op"], r["streams"]): r["ns_per_op"] for r in ref["results"]}
    ossl = {r["op"]: r["ns_per_op"] for r in ref.get("openssl", [])}
    rc = {r["op"]: r["ns_per_op"] for r in ours["results"] if r["engine"] == "rustcrypto"}
    print(f"Measured {stamp} on {ours.get('machine', platform.processor())}, one pinned core.\n")
    print("Primitive limits (one operation on a 172-byte packet):\n")
    print("| reference | AES-128-CTR 160 B | SHA-1 4 blocks | limit (sum) | AES-128-GCM seal 160 B |")
    print("|---|---|---|---|---|")
    print(f"| OpenSSL 3 (EVP) | {ossl.get('aes128_ctr', 0):.0f} ns | {ossl.get('sha1_4blocks', 0):.0f} ns "
          f"| {ossl.get('primitive_limit', 0):.0f} ns | {ossl.get('gcm_seal', 0):.0f} ns |")
    sha = next((v for k, v in rc.items() if k.startswith("sha1_")), 0)
    print(f"| RustCrypto (same crates as `cpu`) | {rc.get('aes128_ctr', 0):.0f} ns | {sha:.0f} ns "
          f"| {rc.get('primitive_limit', 0):.0f} ns | {rc.get('gcm_seal', 0):.0f} ns |")
    aws = {r["op"]: r["ns_per_op"] for r in ours["results"] if r["engine"] == "aws-lc"}
    if aws:
        print(f"| aws-lc (the `cpu` engine's GCM) | | | | {aws.get('gcm_seal', 0):.0f} ns |")
    print()
    print("| engine | suite | op | streams | ns/op | Mops/s | libsrtp ns/op | × libsrtp | × OpenSSL limit |")
    print("|---|---|---|---|---|---|---|---|---|")
    limit = ossl.get("primitive_limit")
    for r in ours["results"]:
        if r["engine"] in ("rustcrypto", "aws-lc"):
            continue
        key = (r["suite"], r["op"], r["streams"])
        ns = r["ns_per_op"]
        l = lib.get(key)
        speed = f"{l / ns:.1f}×" if l else "—"
        lim = f"{ns / limit:.2f}" if limit and r["suite"].startswith("AES_CM_128_HMAC_SHA1_80") else ""
        print(f"| {r['engine']} | {r['suite']} | {r['op']} | {r['streams']} | {ns:.0f} | {1e3 / ns:.2f} "
              f"| {l:.0f} | {speed} | {lim} |" if l else
              f"| {r['engine']} | {r['suite']} | {r['op']} | {r['streams']} | {ns:.0f} | {1e3 / ns:.2f} | — | — | {lim} |")
    print()
    print("Cost of 10 000 streams relative to 1 stream (same engine, suite and op):\n")
    print("| engine | suite | op | 10k / 1 |")
    print("|---|---|---|---|")
    one = {(r["engine"], r["suite"], r["op"]): r["ns_per_op"] for r in ours["results"] if r["streams"] == 1}
    for r in ours["results"]:
        if r["streams"] == 10000 and (r["engine"], r["suite"], r["op"]) in one:
            print(f"| {r['engine']} | {r['suite']} | {r['op']} | {r['ns_per_op'] / one[(r['engine'], r['suite'], r['op'])]:.2f} |")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else "")
