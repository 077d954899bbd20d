"""How probes call the pure parsers (envdoctor/parsers): a ParseError leaves that one part
unknown, with the reason recorded as evidence of `source`; the rest of the probe goes on."""
from __future__ import annotations

from typing import Any, Callable, List

from envdoctor.parsers import ParseError
from envdoctor.snapshot import Evidence


def parsed(evidence: List[Evidence], source: str, parse: Callable[..., Any], *args: Any, default: Any = None) -> Any:
    """parse(*args), or `default` with Evidence(source, "could not read: <why>") when it raises ParseError."""
    try:
        return parse(*args)
    except ParseError as exc:
        evidence.append(Evidence(source, f"could not read: {exc}"))
        return default
