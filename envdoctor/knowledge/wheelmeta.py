"""What both readers of a wheel's metadata share: the index client (envdoctor.knowledge.index: PEP 658 files and
local wheels) and the range reader (envdoctor.knowledge.lazywheel: remote wheels without them). The client imports
the range reader on first use, so what the range reader needs of it lives here, below both."""
from __future__ import annotations

import email.parser
import socket
from dataclasses import dataclass
from typing import List, Optional


@dataclass
class Metadata:
    """The parts of a wheel's core metadata envdoctor uses."""

    name: str
    version: str
    requires_python: Optional[str]
    requires_dist: List[str]
    provides_extra: List[str]
    source: str  # where it was read (the .metadata URL, or the wheel URL for a local wheel)
    wheel: str  # the wheel's file name


def parse_metadata(text: str, source: str, wheel: str) -> Optional[Metadata]:
    """Core metadata (RFC 822 headers) -> Metadata; None when it has no Name/Version."""
    try:
        msg = email.parser.HeaderParser().parsestr(text)
    except Exception:  # noqa: BLE001
        return None
    name, version = msg.get("Name"), msg.get("Version")
    if not name or not version:
        return None
    return Metadata(name=str(name).strip(), version=str(version).strip(),
                    requires_python=(str(msg.get("Requires-Python")).strip() if msg.get("Requires-Python") else None),
                    requires_dist=[str(x).strip() for x in (msg.get_all("Requires-Dist") or [])],
                    provides_extra=[str(x).strip() for x in (msg.get_all("Provides-Extra") or [])],
                    source=source, wheel=wheel)


def shut_response(resp: object) -> None:
    """Best effort: shut the socket under a requests response down, so a read blocked on it returns now."""
    raw = getattr(resp, "raw", None)
    conn = getattr(raw, "connection", None) or getattr(raw, "_connection", None)
    sock = getattr(conn, "sock", None)
    if sock is None:
        return
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except (OSError, AttributeError):
        pass
