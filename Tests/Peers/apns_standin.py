#!/usr/bin/python3
"""APNs provider API stand-in for the relay tests: HTTP/2 over TLS (Python h2 + ssl) on loopback.

It checks every request the way APNs does (method and path, provider JWT signed ES256 by the configured
.p8 key with the right kid and iss, apns-push-type background, apns-priority 5, apns-topic, an integer
apns-expiration, the silent-push body), answers per token as the script file says, and appends one JSON
line per request to the log file so tests can check what arrived. Run by /usr/bin/python3 (Debian's
python3-h2 and python3-cryptography).

Usage: apns_standin.py --script SCRIPT.json --log LOG.jsonl --cert-dir DIR
Prints "PORT <n>" once listening; DIR/ca.pem is the CA that issued its certificate (CN/SAN 127.0.0.1).

Script (re-read whenever the file changes):
  {"p8": PATH, "key_id": K, "team_id": T, "topic": BUNDLE,
   "answers": {"<hex token>": {"status": 410, "reason": "Unregistered", "timestamp": MS}, ...},
   "reject_iat_before": SECONDS or null,     # ExpiredProviderToken for JWTs issued earlier
   "answer_delay_ms": N (optional),          # answers leave one at a time, N ms apart (requests are logged on arrival)
   "hold_answers": true (optional),          # answers wait until the script no longer says so (checked every 20 ms)
   "default": {"status": 200}}
"""
import argparse, asyncio, base64, datetime, ipaddress, json, os, re, ssl, sys, time, uuid

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
from cryptography.exceptions import InvalidSignature
from cryptography.x509.oid import NameOID
from h2.config import H2Configuration
from h2.connection import H2Connection
from h2.events import ConnectionTerminated, DataReceived, RequestReceived, StreamEnded, StreamReset
from h2.settings import SettingCodes

EXPECTED_BODY = {"aps": {"content-available": 1}}
TOKEN_PATH = re.compile(r"^/3/device/([0-9a-f]{32,400})$")


def b64url_decode(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class Script:
    def __init__(self, path):
        self.path, self.mtime, self.data, self.public_key, self.verified = path, None, {}, None, {}

    def current(self):
        mtime = os.stat(self.path).st_mtime_ns
        if mtime != self.mtime:
            with open(self.path) as f:
                self.data = json.load(f)
            with open(self.data["p8"], "rb") as f:
                self.public_key = serialization.load_pem_private_key(f.read(), None).public_key()
            self.mtime, self.verified = mtime, {}
        return self.data

    def check_jwt(self, jwt):
        """None when the provider token is valid for this key, else the APNs reason; also returns iat."""
        if jwt in self.verified:
            return self.verified[jwt]
        result = self._check_jwt(jwt)
        self.verified[jwt] = result
        return result

    def _check_jwt(self, jwt):
        try:
            head_b64, claims_b64, sig_b64 = jwt.split(".")
            header, claims = json.loads(b64url_decode(head_b64)), json.loads(b64url_decode(claims_b64))
            signature = b64url_decode(sig_b64)
        except Exception:
            return ("InvalidProviderToken", None)
        if header.get("alg") != "ES256" or len(signature) != 64:
            return ("InvalidProviderToken", None)
        if header.get("kid") != self.data["key_id"]:
            return ("InvalidProviderToken", None)
        if claims.get("iss") != self.data["team_id"] or not isinstance(claims.get("iat"), int):
            return ("InvalidProviderToken", None)
        der = encode_dss_signature(int.from_bytes(signature[:32], "big"), int.from_bytes(signature[32:], "big"))
        try:
            self.public_key.verify(der, (head_b64 + "." + claims_b64).encode(), ec.ECDSA(hashes.SHA256()))
        except InvalidSignature:
            return ("InvalidProviderToken", claims["iat"])
        return (None, claims["iat"])


class State:
    connections = 0
    next_answer_at = 0.0
    held = []


class APNsProtocol(asyncio.Protocol):
    def __init__(self, script, log):
        self.script, self.log = script, log

    def connection_made(self, transport):
        State.connections += 1
        self.connection_id = State.connections
        self.transport = transport
        self.conn = H2Connection(config=H2Configuration(client_side=False, header_encoding="utf-8"))
        self.conn.update_settings({SettingCodes.MAX_CONCURRENT_STREAMS: 1000})
        self.conn.initiate_connection()
        self.streams = {}
        transport.write(self.conn.data_to_send())

    def data_received(self, data):
        try:
            events = self.conn.receive_data(data)
        except Exception:
            self.transport.close()
            return
        for event in events:
            if isinstance(event, RequestReceived):
                self.streams[event.stream_id] = (event.headers, bytearray())
            elif isinstance(event, DataReceived):
                if event.stream_id in self.streams:
                    self.streams[event.stream_id][1].extend(event.data)
                self.conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            elif isinstance(event, StreamEnded):
                headers, body = self.streams.pop(event.stream_id, ([], b""))
                self.answer(event.stream_id, headers, bytes(body))
            elif isinstance(event, StreamReset):
                self.streams.pop(event.stream_id, None)
            elif isinstance(event, ConnectionTerminated):
                self.transport.close()
        self.transport.write(self.conn.data_to_send())

    def judge(self, headers, body):
        """(status, reason, record) for one request, checking it as APNs would."""
        script = self.script.current()
        names = [name for name, _ in headers]
        fields = dict(headers)
        # arrived_ms: when the whole request had arrived here (Unix ms), the observer's own clock.
        record = {"conn": self.connection_id, "arrived_ms": int(time.time() * 1000), "method": fields.get(":method"), "path_ok": False,
                  "push_type": fields.get("apns-push-type"), "priority": fields.get("apns-priority"),
                  "topic": fields.get("apns-topic"), "expiration": fields.get("apns-expiration"), "iat": None,
                  "violation": None, "token": None}
        duplicates = [n for n in set(names) if names.count(n) > 1 and not n.startswith(":")]
        match = TOKEN_PATH.match(fields.get(":path", ""))
        if match:
            record["token"], record["path_ok"] = match.group(1), True
        if fields.get(":method") != "POST":
            return 405, "MethodNotAllowed", record
        if not match:
            return 404, "BadPath", record
        if duplicates:
            return 400, "DuplicateHeaders", record
        auth = fields.get("authorization", "")
        if not auth.startswith("bearer "):
            return 403, "MissingProviderToken", record
        problem, iat = self.script.check_jwt(auth[len("bearer "):])
        record["iat"] = iat
        if problem:
            return 403, problem, record
        if fields.get("apns-push-type") != "background":
            return 400, "InvalidPushType", record
        if fields.get("apns-priority") != "5":
            return 400, "BadPriority", record
        if not fields.get("apns-topic"):
            return 400, "MissingTopic", record
        if fields.get("apns-topic") != script["topic"]:
            return 400, "BadTopic", record
        if not re.fullmatch(r"[0-9]+", fields.get("apns-expiration", "")):
            return 400, "BadExpirationDate", record
        if not body:
            return 400, "PayloadEmpty", record
        try:
            payload = json.loads(body)
        except ValueError:
            payload = None
        if payload != EXPECTED_BODY:
            return 400, "BadPayload", record
        limit = script.get("reject_iat_before")
        if limit is not None and iat < limit:
            return 403, "ExpiredProviderToken", record
        answer = script.get("answers", {}).get(record["token"], script.get("default", {"status": 200}))
        return answer["status"], answer.get("reason"), dict(record, timestamp=answer.get("timestamp"))

    def answer(self, stream_id, headers, body):
        status, reason, record = self.judge(headers, body)
        scripted = record.pop("timestamp", None)
        # A failed check is a violation (the scripted answers never use these reasons).
        if reason in ("MethodNotAllowed", "BadPath", "DuplicateHeaders", "MissingProviderToken", "InvalidProviderToken",
                      "InvalidPushType", "BadPriority", "MissingTopic", "BadTopic", "BadExpirationDate", "PayloadEmpty", "BadPayload"):
            record["violation"] = reason
        record["status"], record["reason"] = status, reason
        self.log.write(json.dumps(record) + "\n")
        if self.script.current().get("hold_answers"):
            State.held.append((self, stream_id, status, reason, scripted))
            return
        delay = self.script.current().get("answer_delay_ms")
        if delay:
            loop = asyncio.get_running_loop()
            State.next_answer_at = max(State.next_answer_at, loop.time()) + delay / 1000.0
            loop.call_at(State.next_answer_at, self.send_delayed, stream_id, status, reason, scripted)
            return
        self.respond(stream_id, status, reason, scripted)

    def send_delayed(self, stream_id, status, reason, scripted):
        if self.transport.is_closing():
            return
        try:
            self.respond(stream_id, status, reason, scripted)
            self.transport.write(self.conn.data_to_send())
        except Exception:
            pass

    def respond(self, stream_id, status, reason, scripted):
        response = [(":status", str(status)), ("apns-id", str(uuid.uuid4()))]
        if status == 200:
            self.conn.send_headers(stream_id, response, end_stream=True)
            return
        payload = {"reason": reason}
        if status == 410:
            payload["timestamp"] = scripted
        data = json.dumps(payload).encode()
        self.conn.send_headers(stream_id, response + [("content-type", "application/json"), ("content-length", str(len(data)))])
        self.conn.send_data(stream_id, data, end_stream=True)


def make_certificates(directory):
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "APNs stand-in test CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
          .not_valid_after(now + datetime.timedelta(days=2))
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    leaf = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=2))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]), critical=False)
            .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    paths = {name: os.path.join(directory, name) for name in ("ca.pem", "server.pem", "server.key")}
    with open(paths["ca.pem"], "wb") as f:
        f.write(ca.public_bytes(serialization.Encoding.PEM))
    with open(paths["server.pem"], "wb") as f:
        f.write(leaf.public_bytes(serialization.Encoding.PEM))
    with open(paths["server.key"], "wb") as f:
        f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    return paths


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--script", required=True)
    parser.add_argument("--log", required=True)
    parser.add_argument("--cert-dir", required=True)
    args = parser.parse_args()
    paths = make_certificates(args.cert_dir)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(paths["server.pem"], paths["server.key"])
    context.set_alpn_protocols(["h2"])
    script = Script(args.script)
    log = open(args.log, "a", buffering=1)
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: APNsProtocol(script, log), "127.0.0.1", 0, ssl=context)
    print("PORT %d" % server.sockets[0].getsockname()[1], flush=True)
    async def release_held():
        while True:
            await asyncio.sleep(0.02)
            if State.held and not script.current().get("hold_answers"):
                held, State.held = State.held, []
                for protocol, stream_id, status, reason, scripted in held:
                    protocol.send_delayed(stream_id, status, reason, scripted)
    releaser = asyncio.ensure_future(release_held())
    async with server:
        await server.serve_forever()
    releaser.cancel()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
