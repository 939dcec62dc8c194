"""Shared pieces of the Python test peers (run with Debian's /usr/bin/python3).

Response scripting, used by http1_server.py and h2_server.py alike. What a request gets
back is decided, in this order of precedence, by:

1. query parameters of the request URL (per request, no setup needed):
     status=N            response status (default 200)
     header=Name:Value   add a response header (repeatable)
     body=TEXT           response body text
     body_size=N         response body of N bytes of "x" (overrides body)
     delay=SECONDS       wait before sending the response head (float)
     echo=1              body is JSON: {"method", "path", "headers": [[name, value], ...], "body"}
     close_delimited=1   (HTTP/1.1 server only) no Content-Length: the body ends when the
                         connection closes, so a client cannot know its size in advance
     drop=1              (HTTP/2 server only) after the delay, close the TCP connection instead
                         of answering: every stream still open on it is left unanswered
2. a routes file given with --routes FILE: JSON {"/path": {"status": 429,
     "headers": [["Retry-After", "5"]], "body": "...", "body_size": 10, "delay": 0.5, "echo": false}}
     matched on the path without its query;
3. the default: 200 with body "ok".

Every peer prints exactly one line "PORT <n>" on stdout once it listens on 127.0.0.1 (port 0
is asked of the OS, so tests never collide), exits when its stdin reaches end-of-file (so a
crashed test run leaves no peer behind), and after --lifetime seconds (default 600) at most.
"""

import json
import os
import sys
import threading
import time
from urllib.parse import urlsplit, parse_qsl


def load_routes(path):
    if not path:
        return {}
    with open(path, "r", encoding="utf-8") as handle:
        return json.load(handle)


class Plan:
    def __init__(self, status=200, headers=None, body=b"ok", delay=0.0, close_delimited=False, drop=False):
        self.close_delimited = close_delimited
        self.drop = drop
        self.status = status
        self.headers = headers or []
        self.body = body
        self.delay = delay


def plan_response(method, target, request_headers, request_body, routes):
    """Decide the response to a request. request_headers: list of (name, value) strings."""
    parts = urlsplit(target)
    path = parts.path or "/"
    route = routes.get(path, {})
    status = int(route.get("status", 200))
    headers = [(str(n), str(v)) for n, v in route.get("headers", [])]
    body = route.get("body", "ok").encode("utf-8")
    if "body_size" in route:
        body = b"x" * int(route["body_size"])
    delay = float(route.get("delay", 0))
    echo = bool(route.get("echo", False))
    close_delimited = bool(route.get("close_delimited", False))
    drop = bool(route.get("drop", False))
    for name, value in parse_qsl(parts.query, keep_blank_values=True):
        if name == "status":
            status = int(value)
        elif name == "header" and ":" in value:
            hname, hvalue = value.split(":", 1)
            headers.append((hname.strip(), hvalue.strip()))
        elif name == "body":
            body = value.encode("utf-8")
        elif name == "body_size":
            body = b"x" * int(value)
        elif name == "delay":
            delay = float(value)
        elif name == "echo":
            echo = value not in ("", "0", "false")
        elif name == "close_delimited":
            close_delimited = value not in ("", "0", "false")
        elif name == "drop":
            drop = value not in ("", "0", "false")
    if echo:
        body = json.dumps({
            "method": method,
            "path": target,
            "headers": [[n, v] for n, v in request_headers],
            "body": request_body.decode("utf-8", "replace"),
        }).encode("utf-8")
        headers.append(("Content-Type", "application/json"))
    return Plan(status, headers, body, delay, close_delimited, drop)


def unblock_termination_signals():
    """A parent may spawn us with SIGTERM/SIGINT blocked (the mask is inherited); make them deliverable."""
    import signal
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGTERM, signal.SIGINT])


def announce_port(port):
    sys.stdout.write("PORT %d\n" % port)
    sys.stdout.flush()


def exit_now(code=0):
    """Leave at once: a normal interpreter shutdown would stall on the stdin watcher thread."""
    try:
        sys.stdout.flush()
    except Exception:
        pass
    os._exit(code)


def exit_with_parent(lifetime, on_exit=None):
    """Exit the process when stdin closes or after `lifetime` seconds; also unblocks SIGTERM/SIGINT."""
    unblock_termination_signals()
    def watch_stdin():
        try:
            while sys.stdin.buffer.read(4096):
                pass
        except Exception:
            pass
        finish()

    def watch_clock():
        time.sleep(lifetime)
        finish()

    def finish():
        try:
            if on_exit:
                on_exit()
        except Exception:
            pass
        os._exit(0)

    threading.Thread(target=watch_stdin, daemon=True).start()
    threading.Thread(target=watch_clock, daemon=True).start()
