"""A one-line status on stderr while a command waits (resolving, reading an index, ingesting), as uv and pip show one.

Shown only where a person watches: stderr is a terminal, ``TERM`` is not ``dumb`` and ``ENVDOCTOR_NO_PROGRESS`` is
not set. On a pipe, in a log or in CI nothing is written, so output there stays exactly the command's own. The line
is redrawn in place by a daemon thread (a spinner, the text, ``done/total`` when counted, the seconds waited) and
erased when the wait ends: what the command prints afterwards never follows a half line.
"""
from __future__ import annotations

import os
import shutil
import sys
import threading
import time
from typing import IO, Optional

FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
TICK = 0.1


def wanted(stream: IO[str]) -> bool:
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        return False
    return tty and os.environ.get("TERM") != "dumb" and not os.environ.get("ENVDOCTOR_NO_PROGRESS")


class Status:
    """``with Status("resolving") as s: s.update("reading x", done=1, total=3)``; a no-op where not :func:`wanted`.
    Without a first text the line starts at the first update: what the command writes to stderr before then (an
    input's errors) is never drawn over."""

    def __init__(self, text: str = "", stream: Optional[IO[str]] = None, enabled: Optional[bool] = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = wanted(self.stream) if enabled is None else enabled
        self.text = text
        self.done: Optional[int] = None
        self.total: Optional[int] = None
        self._start = time.monotonic()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._draw_lock = threading.Lock()  # the ticker and an update's first drawing never interleave
        self._frame = 0
        self._thread: Optional[threading.Thread] = None

    def __enter__(self) -> "Status":
        if self.text:
            self._begin()
        return self

    def _begin(self) -> None:
        if self.enabled and self._thread is None and not self._stop.is_set():
            self._thread = threading.Thread(target=self._run, name="envdoctor-progress", daemon=True)
            self._thread.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __call__(self, text: str, done: Optional[int] = None, total: Optional[int] = None) -> None:
        self.update(text, done, total)

    def update(self, text: str, done: Optional[int] = None, total: Optional[int] = None) -> None:
        with self._lock:
            new_stage = text != self.text
            self.text, self.done, self.total = text, done, total
        self._begin()
        if new_stage and self._thread is not None:
            # a new stage is shown at once, not at the next tick: a stage shorter than a tick is still seen
            self._draw()

    def echo(self, text: str) -> None:
        """Write a line of the command's own (text + newline) above the status line, which is redrawn under it; a
        plain write where the status is not shown."""
        with self._draw_lock:
            if self._thread is not None and not self._stop.is_set():
                self._write("\r\x1b[K" + text + "\n" + self._line(self._frame))
            else:
                self._write(text + "\n")

    def close(self) -> None:
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join(timeout=1.0)
        self._thread = None
        with self._draw_lock:
            self._write("\r\x1b[K")

    def _draw(self) -> None:
        with self._draw_lock:
            if not self._stop.is_set():
                self._write(self._line(self._frame))
                self._frame += 1

    def _line(self, frame: int) -> str:
        with self._lock:
            text, done, total = self.text, self.done, self.total
        count = f" [{done}/{total}]" if done is not None and total else f" [{done}]" if done is not None else ""
        line = f"{FRAMES[frame % len(FRAMES)]} {text}{count} {time.monotonic() - self._start:.1f} s"
        width = shutil.get_terminal_size().columns
        if len(line) >= width:  # a wrapped line cannot be redrawn in place
            line = line[:max(width - 2, 1)] + "…"
        return f"\r{line}\x1b[K"

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # the terminal went away: the command's own output decides what happens
            self._stop.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            self._draw()
            self._stop.wait(TICK)


__all__ = ["Status", "wanted"]
