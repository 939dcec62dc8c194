"""A real iroh endpoint (PyPI `iroh`, the official bindings of the Rust library) speaking VniDrop's link protocols.

Run only inside a loopback-only network namespace (the Swift helper `IrohNamespace` does that): iroh's port
mapper sends UPnP multicast and binds wildcard sockets even with relays and discovery off.

    iroh_peer.py offer-client  SECRET_HEX SERVER_ID PORT BUNDLE OFFER_ID [ALPN]
        dials our serve-link, says hello, proves the grant in BUNDLE (we are its holder), delivers one offer.
    iroh_peer.py dial          SECRET_HEX SERVER_ID PORT ALPN
        dials and reports only whether the handshake completed (wrong id, unknown ALPN).
    iroh_peer.py streams       SECRET_HEX SERVER_ID PORT
        dials /vnidrop/offer/1, says hello on a first stream and reads the challenge, then tries to open a second
        bidirectional and a unidirectional stream (each may wait 2 s for the server's credit).
    iroh_peer.py bench-serve
        job-bench link's baseline server, alone in its process: prints {"ready": true, "id", "port", "grant_id",
        "grant_secret"}, then answers /vnidrop/offer/1 (hello, challenge, proof check, offer, result) until killed.
    iroh_peer.py bench-dial    SERVER_ID PORT GRANT_ID GRANT_SECRET DIALERS OFFERS GO_FILE
        job-bench link's baseline diallers: DIALERS iroh endpoints in this process, each delivering OFFERS offers
        one connection at a time once GO_FILE exists; prints {"latencies": [seconds of each connect+proof]}.
    iroh_peer.py serve         SECRET_HEX MODE GRANT_ID GRANT_SECRET [OFFER_JSON]
        serves one connection: MODE pull (hands OFFER_JSON over on /vnidrop/pull/1), offer (takes one offer),
        revoke (takes a revoke notice); proofs are checked against the grant it issued.

Every peer prints JSON lines: first {"ready": ..., "id": HEX, "port": P} (servers), then one result object.
"""
import asyncio
import hashlib
import hmac
import json
import os
import struct
import sys

import iroh

ALPNS = [b"/vnidrop/offer/1", b"/vnidrop/pull/1", b"/vnidrop/revoke/1", b"/vnidrop/cancel/1"]


def say(obj):
    print(json.dumps(obj), flush=True)


async def endpoint(secret_hex, alpns):
    options = iroh.EndpointOptions(preset=iroh.preset_minimal(), relay_mode=iroh.RelayMode.disabled(),
                                   bind_addr="127.0.0.1:0", secret_key=bytes.fromhex(secret_hex), alpns=alpns)
    return await iroh.Endpoint.bind(options)


async def send(stream, obj):
    body = json.dumps(obj).encode()
    await stream.write_all(struct.pack(">I", len(body)) + body)


async def receive(stream):
    header = await stream.read_exact(4)
    (length,) = struct.unpack(">I", header)
    if length > 65536:
        raise ValueError("oversize frame")
    return json.loads(await stream.read_exact(length))


def proof(secret, challenge, issuer, holder):
    return hmac.new(secret, b"vnidrop-grant-v1" + challenge + issuer + holder, hashlib.sha256).digest()


async def dial(ep, server_id, port, alpn):
    addr = iroh.EndpointAddr(iroh.EndpointId.from_string(server_id), None, [f"127.0.0.1:{port}"])
    return await asyncio.wait_for(ep.connect(addr, alpn), 15)


async def offer_client(secret_hex, server_id, port, bundle, offer_id, alpn=b"/vnidrop/offer/1"):
    ep = await endpoint(secret_hex, [])
    fields = bundle.strip().split(".")
    issuer, holder, grant_id, grant_secret = (bytes.fromhex(f) for f in fields[1:5])
    conn = await dial(ep, server_id, port, alpn)
    bi = await conn.open_bi()
    out, inp = bi.send(), bi.recv()
    await send(out, {"type": "hello"})
    challenge = await receive(inp)
    assert challenge["type"] == "challenge", challenge
    mac = proof(grant_secret, bytes.fromhex(challenge["challenge"]), issuer, holder)
    await send(out, {"type": "proof", "grant_id": grant_id.hex(), "proof": mac.hex()})
    answer = await receive(inp)
    result = {"answer": answer.get("answer"), "remote": str(conn.remote_id())}
    if answer.get("answer") == "accepted":
        await send(out, {"type": "offer", "offer_id": offer_id, "ticket": "ticket-from-iroh", "sender_name": "py",
                         "file_count": 2, "total_bytes": 42})
        reply = await receive(inp)
        result["result"] = reply.get("result")
    await out.finish()
    conn.close(0, b"done")
    say(result)
    await ep.close()


async def dial_only(secret_hex, server_id, port, alpn):
    ep = await endpoint(secret_hex, [])
    try:
        conn = await dial(ep, server_id, port, alpn.encode())
        say({"connected": True, "remote": str(conn.remote_id())})
        conn.close(0, b"done")
    except Exception as error:  # the refusal is the result
        say({"connected": False, "error": repr(error) + " " + " ".join(str(a) for a in getattr(error, "args", ()))})
    await ep.close()


async def streams(secret_hex, server_id, port):
    ep = await endpoint(secret_hex, [])
    conn = await dial(ep, server_id, port, b"/vnidrop/offer/1")
    first = await conn.open_bi()
    await send(first.send(), {"type": "hello"})
    result = {"challenge": (await receive(first.recv())).get("type") == "challenge"}
    for name, opener in (("second_bidi", conn.open_bi), ("uni", conn.open_uni)):
        try:
            await asyncio.wait_for(opener(), 2)
            result[name] = "opened"
        except asyncio.TimeoutError:
            result[name] = "blocked"
        except Exception as error:
            result[name] = "refused: " + repr(error)
    conn.close(0, b"done")
    say(result)
    await ep.close()


async def serve(secret_hex, mode, grant_id_hex, grant_secret_hex, offer_json=None):
    ep = await endpoint(secret_hex, ALPNS)
    port = int(ep.bound_sockets()[0].rsplit(":", 1)[1])
    say({"ready": True, "id": str(ep.id()), "port": port})
    me = ep.id().to_bytes()
    result = {"connections": 0}
    while True:
        incoming = await ep.accept_next()
        accepting = await incoming.accept()
        try:
            conn = await accepting.connect()
        except Exception as error:
            result.setdefault("refused", []).append(str(error))
            say({"event": "refused", "error": str(error)})
            continue
        result["connections"] += 1
        result["alpn"] = conn.alpn().decode()
        result["remote"] = str(conn.remote_id())
        bi = await conn.accept_bi()
        out, inp = bi.send(), bi.recv()
        hello = await receive(inp)
        assert hello["type"] == "hello", hello
        if mode == "revoke":
            notice = await receive(inp)
            result["revoke"] = notice
            await send(out, {"type": "done"})
        else:
            challenge = bytes(range(32))
            await send(out, {"type": "challenge", "challenge": challenge.hex()})
            prove = await receive(inp)
            expected = proof(bytes.fromhex(grant_secret_hex), challenge, me, conn.remote_id().to_bytes())
            ok = prove.get("grant_id") == grant_id_hex and hmac.compare_digest(bytes.fromhex(prove["proof"]), expected)
            result["proof"] = "accepted" if ok else "lapsed"
            await send(out, {"type": "answer", "answer": result["proof"]})
            if ok and mode == "pull":
                request = await receive(inp)
                result["pull"] = request
                await send(out, {"type": "offers", "offers": [json.loads(offer_json)]})
                result["ack"] = await receive(inp)
                await send(out, {"type": "offers", "offers": []})
            elif ok and mode == "offer":
                result["offer"] = await receive(inp)
                await send(out, {"type": "offer-result", "result": "pending", "decisions": []})
        await out.finish()
        # The dialler closes first once it has read everything.
        try:
            await asyncio.wait_for(conn.closed(), 10)
        except asyncio.TimeoutError:
            pass
        say(result)
        break
    await ep.close()


async def bench_answer(conn, secret, me):
    bi = await conn.accept_bi()
    out, inp = bi.send(), bi.recv()
    assert (await receive(inp))["type"] == "hello"
    challenge = os.urandom(32)
    await send(out, {"type": "challenge", "challenge": challenge.hex()})
    prove = await receive(inp)
    ok = hmac.compare_digest(bytes.fromhex(prove["proof"]), proof(secret, challenge, me, conn.remote_id().to_bytes()))
    await send(out, {"type": "answer", "answer": "accepted" if ok else "lapsed"})
    await receive(inp)
    await send(out, {"type": "offer-result", "result": "pending", "decisions": []})
    await out.finish()
    try:
        await asyncio.wait_for(conn.closed(), 10)
    except asyncio.TimeoutError:
        pass


async def bench_serve():
    server = await endpoint(os.urandom(32).hex(), [b"/vnidrop/offer/1"])
    port = int(server.bound_sockets()[0].rsplit(":", 1)[1])
    me = server.id().to_bytes()
    secret = os.urandom(32)
    grant_id = os.urandom(16).hex()
    say({"ready": True, "id": str(server.id()), "port": port, "grant_id": grant_id, "grant_secret": secret.hex()})
    tasks = set()
    while True:
        incoming = await server.accept_next()
        if incoming is None:
            return

        async def one(incoming=incoming):
            conn = await (await incoming.accept()).connect()
            await bench_answer(conn, secret, me)
        task = asyncio.ensure_future(one())
        tasks.add(task)
        task.add_done_callback(tasks.discard)


async def bench_dial(server_id, port, grant_id, grant_secret, dialers, offers, go):
    import time
    me = iroh.EndpointId.from_string(server_id).to_bytes()
    secret = bytes.fromhex(grant_secret)
    endpoints = [await endpoint(os.urandom(32).hex(), []) for _ in range(dialers)]
    while not os.path.exists(go):
        await asyncio.sleep(0.001)
    latencies = []

    async def dialer(ep):
        holder = ep.id().to_bytes()
        addr = iroh.EndpointAddr(iroh.EndpointId.from_string(server_id), None, [f"127.0.0.1:{port}"])
        for _ in range(offers):
            start = time.monotonic()
            conn = await ep.connect(addr, b"/vnidrop/offer/1")
            bi = await conn.open_bi()
            out, inp = bi.send(), bi.recv()
            await send(out, {"type": "hello"})
            challenge = bytes.fromhex((await receive(inp))["challenge"])
            await send(out, {"type": "proof", "grant_id": grant_id, "proof": proof(secret, challenge, me, holder).hex()})
            assert (await receive(inp))["answer"] == "accepted"
            latencies.append(time.monotonic() - start)
            await send(out, {"type": "offer", "offer_id": os.urandom(16).hex(), "ticket": "bench", "file_count": 1, "total_bytes": 1})
            assert (await receive(inp))["result"] == "pending"
            await out.finish()
            conn.close(0, b"done")
        await ep.close()

    await asyncio.gather(*(dialer(ep) for ep in endpoints))
    say({"latencies": latencies})


def main():
    command, args = sys.argv[1], sys.argv[2:]
    if command == "offer-client":
        alpn = args[5].encode() if len(args) > 5 else b"/vnidrop/offer/1"
        asyncio.run(offer_client(args[0], args[1], int(args[2]), args[3], args[4], alpn))
    elif command == "dial":
        asyncio.run(dial_only(args[0], args[1], int(args[2]), args[3]))
    elif command == "streams":
        asyncio.run(streams(args[0], args[1], int(args[2])))
    elif command == "bench-serve":
        asyncio.run(bench_serve())
    elif command == "bench-dial":
        asyncio.run(bench_dial(args[0], int(args[1]), args[2], args[3], int(args[4]), int(args[5]), args[6]))
    elif command == "serve":
        asyncio.run(serve(*args))
    else:
        raise SystemExit("unknown command")


if __name__ == "__main__":
    main()
