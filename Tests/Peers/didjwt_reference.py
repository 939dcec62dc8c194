#!/usr/bin/python3
"""An independent re-implementation of did-jwt's `createJWT` with an ES256K signer, for byte-for-byte checks.

did-jwt builds `{ iat, exp, ...payload, iss }` and serializes it with JSON.stringify (insertion order, no
spaces), with the header `{"typ":"JWT","alg":"ES256K"}`, and signs SHA-256 of `b64url(header).b64url(payload)`
with secp256k1 ECDSA: RFC 6979 deterministic nonce (HMAC-SHA256), low S, 64-byte r||s, base64url without
padding. The issuer DID is `did:ethr:` + the EIP-55 checksummed Ethereum address of the key.

Everything here is pure Python (the curve and Keccak-256 come from endorser_standin.py beside it), sharing no
code with the Swift under test. Usage:
  didjwt_reference.py selftest           checks the did-jwt reference vectors
  didjwt_reference.py < cases.jsonl      one JSON case per line: {"key": hex, "iat": n, "nbf": n, "exp": n};
                                         prints one line per case: "<did> <token>"
"""
import base64
import hashlib
import hmac
import json
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from endorser_standin import G, N, _mul, keccak256  # noqa: E402


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def rfc6979_nonce(secret, digest):
    """RFC 6979 section 3.2 with HMAC-SHA256 (as libsecp256k1 and @noble/curves seed it: key || hash)."""
    v = b"\x01" * 32
    k = b"\x00" * 32
    seed = secret.to_bytes(32, "big") + digest
    k = hmac.new(k, v + b"\x00" + seed, hashlib.sha256).digest()
    v = hmac.new(k, v, hashlib.sha256).digest()
    k = hmac.new(k, v + b"\x01" + seed, hashlib.sha256).digest()
    v = hmac.new(k, v, hashlib.sha256).digest()
    while True:
        v = hmac.new(k, v, hashlib.sha256).digest()
        candidate = int.from_bytes(v, "big")
        if 1 <= candidate < N:
            return candidate
        k = hmac.new(k, v + b"\x00", hashlib.sha256).digest()
        v = hmac.new(k, v, hashlib.sha256).digest()


def sign_es256k(secret, message):
    digest = hashlib.sha256(message).digest()
    e = int.from_bytes(digest, "big") % N
    k = rfc6979_nonce(secret, digest)
    r = _mul(k, G)[0] % N
    s = pow(k, -1, N) * (e + r * secret) % N
    if s > N // 2:
        s = N - s
    return r.to_bytes(32, "big") + s.to_bytes(32, "big")


def did_ethr(secret):
    x, y = _mul(secret, G)
    address = keccak256(x.to_bytes(32, "big") + y.to_bytes(32, "big"))[-20:].hex()
    checksum = keccak256(address.encode("ascii")).hex()
    spelled = "".join(c.upper() if c.isalpha() and int(checksum[i], 16) >= 8 else c for i, c in enumerate(address))
    return "did:ethr:0x" + spelled


def create_jwt(secret, payload, issuer, header=None):
    header = header if header is not None else {"typ": "JWT", "alg": "ES256K"}
    full = {"iat": payload.get("iat"), "exp": None}
    for key, value in payload.items():
        full[key] = value
    full["iss"] = issuer
    if full["exp"] is None:
        del full["exp"]
    encode = lambda obj: b64url(json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))
    signing_input = encode(header) + "." + encode(full)
    return signing_input + "." + b64url(sign_es256k(secret, signing_input.encode("ascii")))


def selftest():
    key = int("278a5de700e29faae8e40e366ec5012b5ec63d36ec77e8a2417154cc1d25383f", 16)
    signature = sign_es256k(key, b"thequickbrownfoxjumpedoverthelazyprogrammer")
    assert b64url(signature) == "jsvdLwqr-O206hkegoq6pbo7LJjCaflEKHCvfohBP9U2H9EZ5Jsw0CncN17WntoUEGmxaZVF2zQjtUEXfhdyBg", b64url(signature)
    jws = b64url(b'{"alg":"ES256K"}') + "." + b64url(b'{"some":"data"}')
    jws += "." + b64url(sign_es256k(key, jws.encode("ascii")))
    assert jws == ("eyJhbGciOiJFUzI1NksifQ.eyJzb21lIjoiZGF0YSJ9.dblNz-7BVLknOFIBPmt5VTG0MDls_Q69WI8OfQuqNdUp4y50-"
                   "b8Ubn0xujm1ijfmfqRunpks5TyWqgMsQkR_GQ"), jws
    assert did_ethr(int("2b6472c026ec2aa2c4235c994a63868fc9212d18b58f6cbfe861b52e71330f5b", 16)) == \
        "did:ethr:0x0000694B58C2cC69658993A90D3840C560f2F51F"
    print("selftest ok")


def main():
    if sys.argv[1:2] == ["selftest"]:
        selftest()
        return
    for line in sys.stdin:
        if not line.strip():
            continue
        case = json.loads(line)
        secret = int(case["key"], 16)
        issuer = did_ethr(secret)
        # The pool passes {exp, nbf} as the payload; iat comes from createJWT's clock.
        token = create_jwt(secret, {"iat": case["iat"], "exp": case["exp"], "nbf": case["nbf"]}, issuer)
        print(issuer, token, flush=True)


if __name__ == "__main__":
    main()
