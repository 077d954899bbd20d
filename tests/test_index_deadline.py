"""The index client's timeout bounds each whole request, not each read (`matrices verify --timeout 2`
against a server sending one byte every 1.5 s ran past 90 s)."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from envdoctor.knowledge import index as I

REPO = Path(__file__).resolve().parents[1]
HEADERS = (b"HTTP/1.1 200 OK\r\nContent-Type: application/vnd.pypi.simple.v1+json\r\n"
           b"Content-Length: 4000\r\n\r\n")


class DripServer:
    """On 127.0.0.1: every connection gets a response one byte every `interval` seconds (from the status line
    with drip="all", after the headers with drip="body"). Bounded: it stops when the client goes, after
    `max_bytes`, or when the test ends."""

    def __init__(self, drip: str = "all", interval: float = 1.5, max_bytes: int = 200) -> None:
        self.drip, self.interval, self.max_bytes = drip, interval, max_bytes
        self.stop = threading.Event()
        self.connections = 0
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.1)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}/simple/"

    def _serve(self, conn: socket.socket) -> None:
        body = b'{"files": [' + b" " * 3980 + b"]}"
        data = HEADERS + body
        sent = 0
        try:
            conn.recv(65536)
            if self.drip == "body":
                conn.sendall(HEADERS)
                sent = len(HEADERS)
            for i in range(sent, min(len(data), sent + self.max_bytes)):
                if self.stop.wait(self.interval):
                    break
                conn.sendall(data[i:i + 1])
        except OSError:  # the client gave up
            pass
        finally:
            conn.close()

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def __enter__(self) -> "DripServer":
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.sock.close()


@pytest.mark.parametrize("drip", ["all", "body"])
def test_one_request_is_bounded_as_a_whole(drip):
    with DripServer(drip) as srv:
        client = I.IndexClient([srv.url], timeout=2.0, retries=0)
        start = time.monotonic()
        with pytest.raises(I.IndexUnavailable) as err:
            client.project_files("torch")
        took = time.monotonic() - start
    assert "timed out after 2 s" in str(err.value)
    assert took < 2.0 + 1.0, f"the request took {took:.1f} s at timeout 2"


def test_matrices_verify_timeout_bounds_the_command():
    """The repro through the CLI: 3 tries of 2 s and the back-off, not minutes; one line, exit 2."""
    with DripServer("all") as srv:
        start = time.monotonic()
        proc = subprocess.run([sys.executable, "-m", "envdoctor", "matrices", "verify", "--timeout", "2",
                               "--index-url", srv.url], capture_output=True, text=True, timeout=120,
                              env=dict(os.environ, PYTHONPATH=str(REPO)))
        took = time.monotonic() - start
        tries = srv.connections
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "timed out after 2 s" in lines[0] and "tried 3 times" in lines[0], proc.stderr
    assert tries == 3
    assert took < 3 * 2 + (I.BACKOFF + 2 * I.BACKOFF) + 15, f"took {took:.1f} s"  # 15 s: interpreter start-up


def test_file_index_refuses_a_fifo(tmp_path):
    simple = tmp_path / "simple" / "torch"
    simple.mkdir(parents=True)
    os.mkfifo(simple / "index.html")
    client = I.IndexClient([(tmp_path / "simple").as_uri()], timeout=2.0)
    with pytest.raises(I.IndexUnavailable, match="not a regular file"):
        client.project_files("torch")
