"""A stand-in for an OpenAI-compatible embeddings endpoint, for tests of the HTTP embedder.

`StubEndpoint` is a real HTTP server on 127.0.0.1 (a thread of the test process) that
answers `POST .../embeddings` with deterministic vectors: a bag of words hashed into
`dim` buckets, where a few words share one bucket ("concepts"), so that a query can
match a text by "meaning" without sharing a word with it (hound ~ puppy ~ dog).

It records every request, and can be told to misbehave: fail the next N requests with
HTTP 500, answer something that is not JSON, answer one embedding too few, or answer
the rows out of order (each still carrying its `index`).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

STUB_MODEL = "stub-embed"
STUB_DIM = 32

# Words that mean the same to the stub: each group is embedded as one word.
CONCEPTS = {
    "canine": ("dog", "dogs", "puppy", "puppies", "hound", "hounds", "pooch"),
    "city": ("lisbon", "town", "capital"),
    "money": ("tax", "taxes", "payment", "invoice"),
}
_CONCEPT_OF = {word: concept for concept, group in CONCEPTS.items() for word in group}
_WORD = re.compile(r"[a-z0-9]+")


def stub_vector(text: str, dim: int = STUB_DIM) -> list[float]:
    """The stub's vector for `text` (not normalised: the embedder must make it unit length)."""
    vector = [0.0] * dim
    for word in _WORD.findall(text.lower()):
        token = _CONCEPT_OF.get(word, word)
        bucket = int.from_bytes(hashlib.sha256(token.encode()).digest()[:4], "big") % dim
        vector[bucket] += 1.0
    if not any(vector):
        vector[0] = 1.0
    # Scaled, so that a unit-length answer is the embedder's doing.
    return [3.0 * v for v in vector]


def stub_unit(text: str, dim: int = STUB_DIM) -> list[float]:
    vector = stub_vector(text, dim)
    norm = math.sqrt(sum(v * v for v in vector))
    return [v / norm for v in vector]


@dataclass(frozen=True)
class Request:
    path: str
    headers: dict[str, str]
    body: Any


class StubEndpoint:
    """One stub embeddings server; `url` is its base URL (`.../v1`)."""

    def __init__(self, port: int = 0, dim: int = STUB_DIM) -> None:
        self.dim = dim
        self.requests: list[Request] = []
        self.fail_next = 0
        """Answer this many of the next requests with HTTP 500."""
        self.mode = "ok"
        """ok, shuffled (rows in reverse order, with their index), not-json, short, bad-rows (a
        list of strings for `data`), or hang (answer nothing until released or closed)."""
        self._released = threading.Event()
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", port), self._handler())
        self._server.daemon_threads = True
        self.port = int(self._server.server_address[1])
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="stub-embeddings", daemon=True
        )
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def texts(self) -> list[str]:
        """Every text embedded so far, in request order."""
        with self._lock:
            return [text for r in self.requests if isinstance(r.body, dict) for text in r.body.get("input", [])]

    def release(self) -> None:
        """Answer from now on, letting requests held by `hang` go (with an error)."""
        self.mode = "ok"
        self._released.set()

    def close(self) -> None:
        self._released.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)

    def _answer(self, path: str, headers: dict[str, str], raw: bytes) -> tuple[int, bytes]:
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        with self._lock:
            self.requests.append(Request(path, headers, body))
            if self.fail_next > 0:
                self.fail_next -= 1
                return 500, b'{"error": "the stub was told to fail"}'
            mode = self.mode
        if mode == "hang":
            self._released.wait(60)
            return 503, b'{"error": "the stub hung"}'
        if not path.endswith("/embeddings") or not isinstance(body, dict):
            return 404, b'{"error": "not here"}'
        texts = body["input"]
        rows = [{"object": "embedding", "index": i, "embedding": stub_vector(t, self.dim)} for i, t in enumerate(texts)]
        if mode == "not-json":
            return 200, b"<html>surely not json</html>"
        if mode == "bad-rows":
            return 200, json.dumps({"object": "list", "data": ["not a row" for _ in texts]}).encode()
        if mode == "short":
            rows = rows[:-1]
        if mode == "shuffled":
            rows.reverse()
        return 200, json.dumps({"object": "list", "model": body.get("model"), "data": rows}).encode()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                status, answer = stub._answer(self.path, dict(self.headers.items()), raw)
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(answer)))
                    self.end_headers()
                    self.wfile.write(answer)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up waiting

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler


@contextmanager
def stub_endpoint(port: int = 0, dim: int = STUB_DIM) -> Iterator[StubEndpoint]:
    stub = StubEndpoint(port, dim)
    try:
        yield stub
    finally:
        stub.close()


def free_port() -> int:
    """A port nothing listens on now (a request to it is refused)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
