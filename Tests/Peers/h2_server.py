#!/usr/bin/python3
"""Scriptable HTTP/2 test server: TLS with ALPN "h2", or h2c with prior knowledge.

    /usr/bin/python3 h2_server.py (--tls-cert PEM --tls-key PEM | --h2c)
                                  [--routes FILE] [--max-streams N] [--lifetime S]

Listens on 127.0.0.1, port chosen by the OS, prints "PORT <n>". Responses are scripted per
request with query parameters or per path with a routes file: see peerlib.py. Many concurrent
streams per connection are answered independently (asyncio + the h2 library, flow control
respected); SETTINGS_MAX_CONCURRENT_STREAMS is --max-streams (default 128).

Connection accounting, so tests can assert multiplexing:
  every response carries "x-peer-connection-id" (1, 2, ... in accept order) and
  "x-peer-connections" (TCP connections accepted so far, including ones that failed TLS);
  GET /_stats answers {"connections": N}; on exit the server prints "CONNECTIONS <n>" on stdout.
A TLS client that does not negotiate "h2" is disconnected.
Stops on SIGTERM/SIGINT or when stdin closes.
"""

import argparse
import asyncio
import json
import signal
import ssl
import sys

import h2.config
import h2.connection
import h2.events
import h2.exceptions
import h2.settings

import peerlib


class Stats:
    connections = 0


def report():
    sys.stdout.write("CONNECTIONS %d\n" % Stats.connections)
    sys.stdout.flush()


class H2Protocol(asyncio.Protocol):
    def __init__(self, routes, max_streams, tls):
        self.routes = routes
        self.max_streams = max_streams
        self.tls = tls
        self.streams = {}
        self.window_waiters = {}
        self.transport = None
        self.conn = None
        self.connection_id = 0

    def connection_made(self, transport):
        Stats.connections += 1
        self.connection_id = Stats.connections
        self.transport = transport
        if self.tls:
            ssl_object = transport.get_extra_info("ssl_object")
            if ssl_object is None or ssl_object.selected_alpn_protocol() != "h2":
                transport.close()
                return
        config = h2.config.H2Configuration(client_side=False, header_encoding="utf-8")
        self.conn = h2.connection.H2Connection(config=config)
        self.conn.local_settings = h2.settings.Settings(
            client=False,
            initial_values={
                h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: self.max_streams,
                h2.settings.SettingCodes.MAX_HEADER_LIST_SIZE: 65536,
            },
        )
        self.conn.initiate_connection()
        self.flush()

    def flush(self):
        data = self.conn.data_to_send()
        if data and not self.transport.is_closing():
            self.transport.write(data)

    def data_received(self, data):
        if self.conn is None:
            return
        try:
            events = self.conn.receive_data(data)
        except h2.exceptions.ProtocolError:
            self.flush()
            self.transport.close()
            return
        for event in events:
            if isinstance(event, h2.events.RequestReceived):
                self.streams[event.stream_id] = {"headers": list(event.headers), "body": bytearray()}
                if event.stream_ended:
                    self.start_response(event.stream_id)
            elif isinstance(event, h2.events.DataReceived):
                stream = self.streams.get(event.stream_id)
                if stream is not None:
                    stream["body"].extend(event.data)
                self.conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            elif isinstance(event, h2.events.StreamEnded):
                if event.stream_id in self.streams:
                    self.start_response(event.stream_id)
            elif isinstance(event, h2.events.StreamReset):
                self.streams.pop(event.stream_id, None)
                self.wake(event.stream_id)
            elif isinstance(event, h2.events.WindowUpdated):
                if event.stream_id == 0:
                    for stream_id in list(self.window_waiters):
                        self.wake(stream_id)
                else:
                    self.wake(event.stream_id)
            elif isinstance(event, h2.events.ConnectionTerminated):
                self.transport.close()
        self.flush()

    def connection_lost(self, exc):
        for stream_id in list(self.window_waiters):
            self.wake(stream_id)

    def wake(self, stream_id):
        waiter = self.window_waiters.pop(stream_id, None)
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def start_response(self, stream_id):
        stream = self.streams.get(stream_id)
        if stream is None or stream.get("started"):
            return
        stream["started"] = True
        asyncio.get_running_loop().create_task(self.respond(stream_id, stream))

    async def respond(self, stream_id, stream):
        headers = dict((n, v) for n, v in stream["headers"] if n.startswith(":"))
        method = headers.get(":method", "GET")
        target = headers.get(":path", "/")
        regular = [(n, v) for n, v in stream["headers"] if not n.startswith(":")]
        if target.split("?", 1)[0] == "/_stats":
            plan = peerlib.Plan(200, [("content-type", "application/json")],
                                json.dumps({"connections": Stats.connections}).encode("utf-8"))
        else:
            plan = peerlib.plan_response(method, target, regular, bytes(stream["body"]), self.routes)
        if plan.delay > 0:
            await asyncio.sleep(plan.delay)
        if plan.drop:
            self.transport.abort()
            return
        try:
            response_headers = [(":status", str(plan.status))]
            response_headers += [(n.lower(), v) for n, v in plan.headers]
            response_headers += [
                ("content-length", str(len(plan.body))),
                ("x-peer-connection-id", str(self.connection_id)),
                ("x-peer-connections", str(Stats.connections)),
            ]
            body = plan.body if method != "HEAD" else b""
            self.conn.send_headers(stream_id, response_headers, end_stream=not body)
            self.flush()
            while body:
                window = self.conn.local_flow_control_window(stream_id)
                if window <= 0:
                    waiter = asyncio.get_running_loop().create_future()
                    self.window_waiters[stream_id] = waiter
                    await waiter
                    if self.transport.is_closing() or stream_id not in self.streams:
                        return
                    continue
                size = min(len(body), window, self.conn.max_outbound_frame_size)
                self.conn.send_data(stream_id, body[:size], end_stream=(size == len(body)))
                body = body[size:]
                self.flush()
        except (h2.exceptions.StreamClosedError, h2.exceptions.ProtocolError, KeyError):
            pass
        finally:
            self.streams.pop(stream_id, None)
            if not self.transport.is_closing():
                self.flush()


async def serve(args):
    routes = peerlib.load_routes(args.routes)
    context = None
    if not args.h2c:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(args.tls_cert, args.tls_key)
        context.set_alpn_protocols(["h2"])
    loop = asyncio.get_running_loop()
    server = await loop.create_server(
        lambda: H2Protocol(routes, args.max_streams, context is not None),
        "127.0.0.1", 0, ssl=context, backlog=128)
    stop = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    peerlib.announce_port(server.sockets[0].getsockname()[1])
    await stop.wait()
    server.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--tls-cert")
    parser.add_argument("--tls-key")
    parser.add_argument("--h2c", action="store_true")
    parser.add_argument("--routes")
    parser.add_argument("--max-streams", type=int, default=128)
    parser.add_argument("--lifetime", type=float, default=600)
    args = parser.parse_args()
    if not args.h2c and not (args.tls_cert and args.tls_key):
        parser.error("give --tls-cert and --tls-key, or --h2c")
    peerlib.exit_with_parent(args.lifetime, on_exit=report)
    asyncio.run(serve(args))
    report()
    peerlib.exit_now()


if __name__ == "__main__":
    main()
