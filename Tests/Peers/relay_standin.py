#!/usr/bin/python3
"""Relay stand-in for the retrigger-stale tests: plain HTTP/1.1 on loopback, scripted per case.

Usage: relay_standin.py --script SCRIPT.json --log LOG.jsonl   (prints "PORT <n>" once listening)

Script (re-read on every request):
  {"trigger": [{"status": 429, "headers": {"Retry-After": "120"}, "body": {...}}, ...],   # one per request, the last
                                                                                        # repeats; a new script restarts
   "health": {"status": 200, "body": {"status": "ok", "version": "1.3.2"}}}
Every request is appended to the log: method, path, content type, the parsed JSON body (null if none or
not JSON), the status answered and the arrival time (Unix seconds), so tests can check exactly what the helper
sent and when.
"""
import argparse, json, os, sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()
COUNT = {"trigger": 0, "mtime": None}


def make_handler(script_path, log_path):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def handle_any(self):
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = "<not json>"
            with LOCK:
                mtime = os.stat(script_path).st_mtime_ns
                if mtime != COUNT["mtime"]:  # a new script starts its answer list from the top
                    COUNT["trigger"], COUNT["mtime"] = 0, mtime
                with open(script_path) as f:
                    script = json.load(f)
                if self.path == "/api/v1/trigger" and self.command == "POST":
                    answers = script.get("trigger") or [{"status": 202}]
                    answer = answers[min(COUNT["trigger"], len(answers) - 1)]
                    COUNT["trigger"] += 1
                elif self.path == "/api/v1/health" and self.command == "GET":
                    answer = script.get("health", {"status": 200, "body": {"status": "ok", "version": "1.3.2"}})
                else:
                    answer = {"status": 404, "body": {"error": "not found"}}
                with open(log_path, "a") as log:
                    log.write(json.dumps({"method": self.command, "path": self.path, "content_type": self.headers.get("Content-Type"),
                                          "body": body, "status": answer["status"], "at": time.time()}) + "\n")
            payload = json.dumps(answer.get("body", {"status": "accepted", "devices_notified": 1} if answer["status"] == 202 else {})).encode()
            self.send_response(answer["status"])
            for name, value in answer.get("headers", {}).items():
                self.send_header(name, value)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        do_GET = do_POST = do_PUT = do_DELETE = handle_any

    return Handler


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--script", required=True)
    parser.add_argument("--log", required=True)
    args = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(args.script, args.log))
    print("PORT %d" % server.server_address[1], flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
