"""A receiver of patchloop's run end notifications, written in Python, for test/e2e/run-notify.test.ts.

    python notify_receiver.py ANSWERS [--hold]

ANSWERS is the HTTP status of each answer in order, comma-separated (the last one repeats): `500,500,200`
fails twice, then accepts. With --hold the first 2xx answer waits until someone POSTs /release. Every
notification is checked with `verify` (the function docs/notifications.md shows, word for word) against
NOTIFY_SECRET, and recorded: GET / answers the list, as JSON. POST /verify checks a request's signature
without recording it. It prints its URL on its first line.
"""

import hashlib
import hmac
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def verify(secret: str, header: str, body: bytes, tolerance_seconds: int = 300) -> bool:
    """Whether `header` (Patchloop-Signature) signs `body` with `secret`, made at most `tolerance_seconds` ago."""
    fields = dict(part.split("=", 1) for part in header.split(",") if "=" in part)
    try:
        timestamp = int(fields["t"])
    except (KeyError, ValueError):
        return False
    if abs(time.time() - timestamp) > tolerance_seconds:
        return False  # too old (or from the future): a replay
    expected = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, fields.get("v1", ""))


ANSWERS = [int(status) for status in sys.argv[1].split(",")]
HOLD = "--hold" in sys.argv[2:]
SECRET = os.environ["NOTIFY_SECRET"]
lock = threading.Lock()
received = []
released = threading.Event()


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        signed = verify(SECRET, self.headers.get("patchloop-signature", ""), body)
        if self.path == "/release":
            released.set()
            return self.answer(200, b"released")
        if self.path == "/verify":
            return self.answer(200, json.dumps({"verified": signed}).encode())
        with lock:
            status = ANSWERS[min(len(received), len(ANSWERS) - 1)]
            received.append(
                {
                    "delivery": self.headers.get("patchloop-delivery"),
                    "verified": signed,
                    "content_type": self.headers.get("content-type"),
                    "body": json.loads(body),
                    "status": status,
                }
            )
        if HOLD and 200 <= status < 300:
            released.wait(60)
        self.answer(status, b"thanks" if status < 300 else b"not now")

    def do_GET(self):
        with lock:
            listed = json.dumps(received).encode()
        self.answer(200, listed)

    def answer(self, status: int, body: bytes):
        self.send_response(status)
        self.send_header("content-type", "text/plain")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
print(f"http://127.0.0.1:{server.server_port}", flush=True)
server.serve_forever()
