#!/usr/bin/python3
"""Endorser stand-in for the TokenPool tests: verifies Bearer JWTs as Endorser does, independently.

Serves POST /api/v2/report/plansLastUpdatedBetween on loopback. The Bearer token is checked the way Endorser's
did-jwt 7.4.7 `verifyJWT` checks it with no audience: three base64url segments, header alg ES256K, `iss`
required and a did:ethr:0x<40 hex> DID, `nbf > now + 300` refused (without nbf: `iat > now + 300`),
`exp <= now - 300` refused, any `aud` refused, and the signer found by recovering the public key from the
64-byte r||s signature over SHA-256(signing input) with recovery ids 0 and 1 and comparing its Ethereum
address (Keccak-256, pre-NIST) with the DID's, case-insensitively. Failures answer HTTP 400
{"error":{"message":...,"code":"JWT_VERIFY_FAILED"}}.

Everything is implemented here in pure Python (secp256k1 arithmetic, Keccak-256): nothing is shared with the
Swift code under test. Debian's /usr/bin/python3, standard library only.

Control (for tests): POST /__control with JSON {"now": unix seconds, "status": int or null, "rows": int or null,
"retry_after": a Retry-After header value sent with a forced status, or null}
sets the emulated clock, forces an HTTP status, or the number of rows answered; GET /__requests returns what
was received (method, path, authorization verdict, parsed body). The port is printed as "PORT <n>" on stdout.
"""
import base64
import hashlib
import json
import os
import signal
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# --- secp256k1 -------------------------------------------------------------------------------------------------
P = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEFFFFFC2F
N = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141
G = (0x79BE667EF9DCBBAC55A06295CE870B07029BFCDB2DCE28D959F2815B16F81798,
     0x483ADA7726A3C4655DA4FBFC0E1108A8FD17B448A68554199C47D08FFB10D4B8)


def _add(a, b):
    """Affine point addition (None is the point at infinity)."""
    if a is None:
        return b
    if b is None:
        return a
    if a[0] == b[0]:
        if (a[1] + b[1]) % P == 0:
            return None
        lam = 3 * a[0] * a[0] * pow(2 * a[1], -1, P) % P
    else:
        lam = (b[1] - a[1]) * pow(b[0] - a[0], -1, P) % P
    x = (lam * lam - a[0] - b[0]) % P
    return (x, (lam * (a[0] - x) - a[1]) % P)


def _mul(k, point):
    result = None
    addend = point
    while k:
        if k & 1:
            result = _add(result, addend)
        addend = _add(addend, addend)
        k >>= 1
    return result


def recover_public_keys(digest, signature):
    """Public keys (x, y) that could have made the 64-byte r||s `signature` over `digest`, recovery ids 0 and 1."""
    r = int.from_bytes(signature[:32], "big")
    s = int.from_bytes(signature[32:], "big")
    if not (0 < r < N and 0 < s < N):
        return []
    e = int.from_bytes(digest, "big") % N
    keys = []
    for recovery_id in (0, 1):
        x = r
        alpha = (pow(x, 3, P) + 7) % P
        beta = pow(alpha, (P + 1) // 4, P)
        if beta * beta % P != alpha:
            continue
        y = beta if beta % 2 == recovery_id else P - beta
        r_inv = pow(r, -1, N)
        point = _add(_mul(s * r_inv % N, (x, y)), _mul((-e * r_inv) % N, G))
        if point is not None:
            keys.append(point)
    return keys


# --- Keccak-256 (Ethereum's, original padding 0x01) -------------------------------------------------------------
_RC = [0x0000000000000001, 0x0000000000008082, 0x800000000000808A, 0x8000000080008000, 0x000000000000808B,
       0x0000000080000001, 0x8000000080008081, 0x8000000000008009, 0x000000000000008A, 0x0000000000000088,
       0x0000000080008009, 0x000000008000000A, 0x000000008000808B, 0x800000000000008B, 0x8000000000008089,
       0x8000000000008003, 0x8000000000008002, 0x8000000000000080, 0x000000000000800A, 0x800000008000000A,
       0x8000000080008081, 0x8000000000008080, 0x0000000080000001, 0x8000000080008008]
_ROT = [[0, 36, 3, 41, 18], [1, 44, 10, 45, 2], [62, 6, 43, 15, 61], [28, 55, 25, 21, 56], [27, 20, 39, 8, 14]]
_M = (1 << 64) - 1


def _rol(v, n):
    return ((v << n) | (v >> (64 - n))) & _M if n else v


def _keccak_f(a):
    for rc in _RC:
        c = [a[x][0] ^ a[x][1] ^ a[x][2] ^ a[x][3] ^ a[x][4] for x in range(5)]
        d = [c[(x - 1) % 5] ^ _rol(c[(x + 1) % 5], 1) for x in range(5)]
        a = [[a[x][y] ^ d[x] for y in range(5)] for x in range(5)]
        b = [[0] * 5 for _ in range(5)]
        for x in range(5):
            for y in range(5):
                b[y][(2 * x + 3 * y) % 5] = _rol(a[x][y], _ROT[x][y])
        a = [[b[x][y] ^ ((~b[(x + 1) % 5][y]) & b[(x + 2) % 5][y]) for y in range(5)] for x in range(5)]
        a[0][0] ^= rc
    return a


def keccak256(data):
    rate = 136
    padded = bytearray(data) + b"\x01"
    while len(padded) % rate:
        padded.append(0)
    padded[-1] |= 0x80
    state = [[0] * 5 for _ in range(5)]
    for offset in range(0, len(padded), rate):
        block = padded[offset:offset + rate]
        for i in range(rate // 8):
            x, y = i % 5, i // 5
            state[x][y] ^= int.from_bytes(block[8 * i:8 * i + 8], "little")
        state = _keccak_f(state)
    out = b"".join(state[i % 5][i // 5].to_bytes(8, "little") for i in range(4))
    return out


def eth_address(point):
    raw = point[0].to_bytes(32, "big") + point[1].to_bytes(32, "big")
    return keccak256(raw)[-20:]


# --- did-jwt verifyJWT (no audience) ---------------------------------------------------------------------------
SKEW = 300
B64URL = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


class VerifyError(Exception):
    pass


def b64url_decode(segment):
    if not segment or any(ch not in B64URL for ch in segment):
        raise VerifyError("invalid_argument: Incorrect format JWT")
    return base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4))


def verify_jwt(token, now):
    """Returns the payload if Endorser would accept `token` at `now`; raises VerifyError otherwise."""
    parts = token.split(".")
    if len(parts) != 3:
        raise VerifyError("invalid_argument: Incorrect format JWT")
    try:
        header = json.loads(b64url_decode(parts[0]))
        payload = json.loads(b64url_decode(parts[1]))
    except (ValueError, UnicodeDecodeError):
        raise VerifyError("invalid_argument: Incorrect format JWT")
    if not isinstance(header, dict) or not isinstance(payload, dict):
        raise VerifyError("invalid_argument: Incorrect format JWT")
    if header.get("alg") != "ES256K":
        raise VerifyError("not_supported: No supported signature types for algorithm")
    iss = payload.get("iss")
    if not iss:
        raise VerifyError("invalid_jwt: JWT iss is required")
    nbf, iat, exp = payload.get("nbf"), payload.get("iat"), payload.get("exp")
    for claim in (nbf, iat, exp):
        if claim is not None and (isinstance(claim, bool) or not isinstance(claim, (int, float))):
            raise VerifyError("invalid_jwt: time claims must be numbers")
    if nbf is not None:
        if nbf > now + SKEW:
            raise VerifyError("invalid_jwt: JWT not valid before nbf: %s" % nbf)
    elif iat is not None and iat > now + SKEW:
        raise VerifyError("invalid_jwt: JWT not valid yet (issued in the future) iat: %s" % iat)
    if exp is not None and exp <= now - SKEW:
        raise VerifyError("invalid_jwt: JWT has expired: exp: %s < now: %s" % (exp, now))
    if "aud" in payload:
        raise VerifyError("invalid_config: JWT audience is required but your app address has not been configured")
    prefix = "did:ethr:0x"
    hexpart = iss[len(prefix):] if isinstance(iss, str) and iss.startswith(prefix) else ""
    if len(hexpart) != 40 or any(ch not in "0123456789abcdefABCDEF" for ch in hexpart):
        raise VerifyError("resolver_error: Unable to resolve DID document")
    signature = b64url_decode(parts[2])
    if len(signature) != 64:
        raise VerifyError("invalid_signature: wrong signature length")
    digest = hashlib.sha256((parts[0] + "." + parts[1]).encode("ascii")).digest()
    wanted = bytes.fromhex(hexpart)
    if not any(eth_address(key) == wanted for key in recover_public_keys(digest, signature)):
        raise VerifyError("invalid_signature: Signature invalid for JWT")
    return payload


# --- HTTP -----------------------------------------------------------------------------------------------------
STATE = {"now": 0, "status": None, "rows": None, "retry_after": None, "requests": []}
LOCK = threading.Lock()
PATH = "/api/v2/report/plansLastUpdatedBetween"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _send(self, status, obj, retry_after=None):
        body = json.dumps(obj, separators=(",", ":")).encode()
        self.send_response(status)
        if retry_after is not None:
            self.send_header("Retry-After", str(retry_after))
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _body(self):
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def do_GET(self):
        if self.path == "/__requests":
            with LOCK:
                self._send(200, STATE["requests"])
        else:
            self._send(404, {"error": {"message": "not found"}})

    def do_POST(self):
        raw = self._body()
        if self.path == "/__control":
            update = json.loads(raw or b"{}")
            with LOCK:
                for key in ("now", "status", "rows", "retry_after"):
                    if key in update:
                        STATE[key] = update[key]
                if update.get("reset"):
                    STATE["requests"] = []
            self._send(200, {"ok": True})
            return
        with LOCK:
            now, forced, rows, retry_after = STATE["now"], STATE["status"], STATE["rows"], STATE["retry_after"]
        record = {"method": "POST", "path": self.path, "content_type": self.headers.get("Content-Type"), "body": None,
                  "verdict": None}
        try:
            record["body"] = json.loads(raw)
        except ValueError:
            record["body"] = None
        with LOCK:
            STATE["requests"].append(record)
        if not self.path.endswith(PATH):
            self._send(404, {"error": {"message": "not found"}})
            return
        if forced is not None:
            record["verdict"] = "forced"
            self._send(forced, {"error": {"message": "forced by the test"}}, retry_after)
            return
        auth = self.headers.get("Authorization") or ""
        if not auth.startswith("Bearer "):
            record["verdict"] = "missing"
            self._send(400, {"error": {"message": "Missing Bearer JWT", "code": "JWT_VERIFY_FAILED"}})
            return
        try:
            payload = verify_jwt(auth[len("Bearer "):], now)
        except VerifyError as error:
            record["verdict"] = str(error)
            self._send(400, {"error": {"message": str(error), "code": "JWT_VERIFY_FAILED"}})
            return
        record["verdict"] = "ok"
        record["iss"] = payload.get("iss")
        body = record["body"]
        if not isinstance(body, dict) or not isinstance(body.get("planIds"), list) or not isinstance(body.get("afterId"), str):
            self._send(400, {"error": {"message": "planIds and afterId are required"}})
            return
        plan_ids = body["planIds"]
        count = len(plan_ids) if rows is None else rows
        # Row i (1-based) is a plan change with jwtId "01HZX4" + 20 digits (ULIDs above the tests' after-id); the
        # answer holds those after afterId (and before beforeId), newest first, at most 50, as Endorser answers.
        after, before = body["afterId"], body.get("beforeId")
        changes = []
        for i in range(count, 0, -1):
            jwt_id = "01HZX4%020d" % i
            if jwt_id > after and (before is None or jwt_id < before):
                handle = plan_ids[i % len(plan_ids)] if plan_ids else "none"
                row = {"plan": {"jwtId": jwt_id, "handleId": handle, "name": "Plan change %d" % i,
                                "issuerDid": "did:ethr:0x000000000000000000000000000000000000000%d" % (i % 10)}}
                if i % 2 == 0:
                    row["wrappedClaimBefore"] = {"name": "Plan change %d, before" % i}
                changes.append(row)
        self._send(200, {"data": changes[:50], "hitLimit": len(changes) > 50})


def main():
    # A test runner may spawn this with SIGTERM blocked or ignored (inherited); restore the defaults.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    # Peer conventions (Tests/Peers/README.md): stop when stdin closes (the test process died) and after a lifetime.
    lifetime = float(sys.argv[sys.argv.index("--lifetime") + 1]) if "--lifetime" in sys.argv else 600.0
    threading.Thread(target=lambda: (sys.stdin.buffer.read(), os._exit(0)), daemon=True).start()
    threading.Timer(lifetime, lambda: os._exit(0)).start()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print("PORT %d" % server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    if sys.argv[1:2] == ["selftest"]:
        assert keccak256(b"").hex() == "c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470"
        sig = base64.urlsafe_b64decode("jsvdLwqr-O206hkegoq6pbo7LJjCaflEKHCvfohBP9U2H9EZ5Jsw0CncN17WntoUEGmxaZVF2zQjtUEXfhdyBg==")
        digest = hashlib.sha256(b"thequickbrownfoxjumpedoverthelazyprogrammer").digest()
        addresses = [eth_address(k).hex() for k in recover_public_keys(digest, sig)]
        assert "f3beac30c498d9e26865f34fcaa57dbb935b0d74" in addresses, addresses
        print("selftest ok")
    else:
        main()
