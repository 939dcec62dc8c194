#!/usr/bin/python3
"""Scriptable HTTP/1.1 test server (optionally over TLS).

    /usr/bin/python3 http1_server.py [--routes FILE] [--tls-cert PEM --tls-key PEM [--client-ca PEM]]
                                     [--lifetime S]

Listens on 127.0.0.1, port chosen by the OS, prints "PORT <n>". Responses are scripted per
request with query parameters or per path with a routes file: see peerlib.py. With --tls-cert
and --tls-key it speaks HTTPS and offers ALPN "http/1.1" only (never h2); --client-ca makes
it require a client certificate issued by that CA (mutual TLS). The TLS handshake runs
in the connection's own thread, so a client that never finishes it blocks nobody else.
Stops on SIGTERM/SIGINT or when stdin closes.
"""

import argparse
import signal
import ssl
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import peerlib


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "PeerHTTP1"
    sys_version = ""

    def log_message(self, format, *args):  # keep test output quiet
        pass

    def handle_any(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length > 0 else b""
        plan = peerlib.plan_response(self.command, self.path, list(self.headers.items()), body, self.server.routes)
        if plan.delay > 0:
            import time
            time.sleep(plan.delay)
        try:
            self.send_response(plan.status)
            for name, value in plan.headers:
                self.send_header(name, value)
            if plan.close_delimited:
                self.send_header("Connection", "close")
                self.close_connection = True
            else:
                self.send_header("Content-Length", str(len(plan.body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(plan.body)
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
            self.close_connection = True

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = handle_any


class Server(ThreadingHTTPServer):
    daemon_threads = True
    tls_context = None
    routes = {}

    def finish_request(self, request, client_address):
        if self.tls_context is None:
            return super().finish_request(request, client_address)
        try:
            wrapped = self.tls_context.wrap_socket(request, server_side=True)
        except (ssl.SSLError, OSError):
            return
        try:
            super().finish_request(wrapped, client_address)
        finally:
            try:
                wrapped.close()
            except OSError:
                pass

    def handle_error(self, request, client_address):
        pass  # clients that go away mid-response are expected in tests


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--routes")
    parser.add_argument("--tls-cert")
    parser.add_argument("--tls-key")
    parser.add_argument("--client-ca")
    parser.add_argument("--lifetime", type=float, default=600)
    args = parser.parse_args()

    server = Server(("127.0.0.1", 0), Handler)
    server.routes = peerlib.load_routes(args.routes)
    if args.tls_cert:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(args.tls_cert, args.tls_key)
        context.set_alpn_protocols(["http/1.1"])
        if args.client_ca:
            context.verify_mode = ssl.CERT_REQUIRED
            context.load_verify_locations(args.client_ca)
        server.tls_context = context
    signal.signal(signal.SIGTERM, lambda *_: peerlib.exit_now())
    peerlib.exit_with_parent(args.lifetime)
    peerlib.announce_port(server.server_address[1])
    try:
        server.serve_forever(poll_interval=0.2)
    except (KeyboardInterrupt, SystemExit):
        pass
    peerlib.exit_now()


if __name__ == "__main__":
    main()
