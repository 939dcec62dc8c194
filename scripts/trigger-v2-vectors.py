#!/usr/bin/python3
"""Writes Tests/Fixtures/trigger-v2/vectors.json: the authenticated trigger v2 test vectors (docs/protocols/trigger-v2.md).

Independent of the Swift code: the Device IDs (Base32 + Syncthing's Luhn mod 32), the signed message and the
signatures are made here with Debian's python3-cryptography, from the keys in Tests/Fixtures/trigger-v2/:

  syncthing-p384/   cert.pem, key.pem from `syncthing generate --home DIR` (Debian's syncthing), and the Device ID
                    it printed (device-id.txt), which this script checks its own computation against
  openssl-p256/     openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 7300 \
                        -subj "/O=Syncthing/OU=Automatically Generated/CN=syncthing" -keyout key.pem -out cert.pem
  openssl-rsa3072/  the same with -newkey rsa:3072

Run from the repository root: python3 scripts/trigger-v2-vectors.py. ECDSA signatures are randomised, so a rerun
writes different (equally valid) ECDSA signatures; the RSA signatures (PKCS#1 v1.5) come out identical.
"""
import base64
import hashlib
import json
import os
import struct
import sys

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

DOMAIN = b"backgroundjobs-trigger-v2\n"
ROUTE = "POST /api/v2/trigger"
TS = "1796300000"  # 2026-12-04T12:13:20Z: the relay clock of the tests that replay these vectors
ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
HERE = os.path.join("Tests", "Fixtures", "trigger-v2")


def luhn32(group):
    """Syncthing's Luhn mod 32 check character over one 13-character group."""
    factor, total = 1, 0
    for ch in group:
        addend = factor * ALPHABET.index(ch)
        factor = 1 if factor == 2 else 2
        total += addend // 32 + addend % 32
    return ALPHABET[(32 - total % 32) % 32]


def device_id(der):
    b32 = base64.b32encode(hashlib.sha256(der).digest()).decode().rstrip("=")
    assert len(b32) == 52
    with_check = "".join(b32[i:i + 13] + luhn32(b32[i:i + 13]) for i in range(0, 52, 13))
    return "-".join(with_check[i:i + 7] for i in range(0, 56, 7))


def field(data):
    return struct.pack(">I", len(data)) + data


def message(route, device, ts, nonce):
    return DOMAIN + field(route.encode()) + field(device.encode()) + field(ts.encode()) + field(nonce)


def sign(key, data):
    if isinstance(key, ec.EllipticCurvePrivateKey):
        width = (key.curve.key_size + 7) // 8
        digest = hashes.SHA384() if key.curve.key_size == 384 else hashes.SHA256()
        r, s = decode_dss_signature(key.sign(data, ec.ECDSA(digest)))
        return r.to_bytes(width, "big") + s.to_bytes(width, "big")
    assert isinstance(key, rsa.RSAPrivateKey)
    return key.sign(data, padding.PKCS1v15(), hashes.SHA256())


def load(name):
    folder = os.path.join(HERE, name)
    with open(os.path.join(folder, "cert.pem"), "rb") as f:
        cert = x509.load_pem_x509_certificate(f.read())
    with open(os.path.join(folder, "key.pem"), "rb") as f:
        key = serialization.load_pem_private_key(f.read(), password=None)
    return cert.public_bytes(serialization.Encoding.DER), key


def b64(data):
    return base64.b64encode(data).decode()


def vector(name, valid, refusal, device, cert, key, nonce, signed_route=ROUTE, signed_device=None, note=""):
    signed = message(signed_route, signed_device or device, TS, nonce)
    sig = sign(key, signed)
    body = json.dumps({"device_id": device, "cert": b64(cert), "ts": TS, "nonce": b64(nonce), "sig": b64(sig)},
                      separators=(",", ":"))
    entry = {"name": name, "valid": valid, "device_id": device, "ts": TS, "nonce_base64": b64(nonce),
             "message_hex": message(ROUTE, device, TS, nonce).hex(), "sig_base64": b64(sig), "body": body}
    if refusal:
        entry["refusal"] = refusal
    if note:
        entry["note"] = note
    return entry


def main():
    keys = {name: load(name) for name in ("syncthing-p384", "openssl-p256", "openssl-rsa3072")}
    with open(os.path.join(HERE, "syncthing-p384", "device-id.txt")) as f:
        printed = f.read().strip()
    computed = device_id(keys["syncthing-p384"][0])
    if computed != printed:
        sys.exit(f"Device ID mismatch: syncthing printed {printed}, computed {computed}")
    ids = {name: device_id(der) for name, (der, _) in keys.items()}
    nonce = lambda i: bytes(range(16 * i, 16 * i + 16))
    out = []
    for i, (name, kind) in enumerate([("syncthing-p384", "ecdsa-p384-sha384"), ("openssl-p256", "ecdsa-p256-sha256"),
                                      ("openssl-rsa3072", "rsa-pkcs1v15-sha256")]):
        der, key = keys[name]
        entry = vector(name, True, None, ids[name], der, key, nonce(i))
        entry["key_type"] = kind
        out.append(entry)
    victim, (victim_der, victim_key) = ids["syncthing-p384"], keys["syncthing-p384"]
    p256_der, p256_key = keys["openssl-p256"]
    other_p384 = ec.generate_private_key(ec.SECP384R1())
    out.append(vector("certificate-of-another-key", False, "certificate-mismatch", victim, p256_der, p256_key, nonce(3),
                      note="the P-256 certificate and its key, naming the P-384 device's Device ID"))
    out.append(vector("signature-by-another-key", False, "bad-signature", victim, victim_der, other_p384, nonce(4),
                      note="the victim's own certificate, signed by a fresh P-384 key"))
    out.append(vector("signature-over-another-device-id", False, "bad-signature", victim, victim_der, victim_key, nonce(5),
                      signed_device=ids["openssl-rsa3072"], note="signed by the right key over the RSA device's Device ID"))
    out.append(vector("signature-over-another-route", False, "bad-signature", victim, victim_der, victim_key, nonce(6),
                      signed_route="POST /api/v1/trigger", note="signed by the right key over the v1 route"))
    trailing = victim_der + b"\x00"
    out.append(vector("certificate-with-trailing-bytes", False, "bad-certificate", device_id(trailing), trailing, victim_key,
                      nonce(7), note="the Device ID is that of the certificate bytes with one trailing zero byte"))
    truncated = victim_der[:-10]
    out.append(vector("truncated-certificate", False, "bad-certificate", device_id(truncated), truncated, victim_key, nonce(8),
                      note="the Device ID is that of the truncated bytes"))
    large = b"\x30\x82\x13\x84" + bytes(5000)
    out.append(vector("oversized-certificate", False, "certificate-too-large", device_id(large), large, victim_key, nonce(9),
                      note="5004 bytes, over the 4096-byte cap"))
    doc = {"domain": DOMAIN.decode(), "route": ROUTE, "relay_now_unix_seconds": int(TS),
           "device_ids": ids, "vectors": out}
    with open(os.path.join(HERE, "vectors.json"), "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
