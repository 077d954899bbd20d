"""Redaction of sensitive values in snapshot (and report) dicts.

What is redacted unless --no-redact: GPU UUIDs and serials (also inside raw
evidence excerpts), the host name, the user's home directory (shown as ~), and
environment values whose name suggests a secret or which embed credentials.
"""
from __future__ import annotations

import os
import re
from typing import Any, Iterable, Optional

REDACTED = "<redacted>"
_UUID_RE = re.compile(r"\b(GPU|MIG)-[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}\b")
_SECRET_NAME_RE = re.compile(r"TOKEN|SECRET|PASSW|CREDENTIAL|AUTH|API_?KEY|PRIVATE", re.IGNORECASE)
_URL_CRED_RE = re.compile(r"(://)[^/@\s:]+:[^/@\s]+@")
_SECRET_KEYS = {"uuid", "serial"}


def redact_value_for_env(name: str, value: str) -> str:
    if _SECRET_NAME_RE.search(name):
        return REDACTED
    return _URL_CRED_RE.sub(r"\1" + REDACTED + "@", value)


def text_redactor(home: Optional[str] = None, hostnames: Iterable[str] = ()):
    """A function that redacts one string: GPU UUIDs, the home directory, the host names."""
    home = home if home is not None else os.path.expanduser("~")
    hosts = [h for h in hostnames if h and len(h) >= 3]

    def text(s: str) -> str:
        s = _UUID_RE.sub(lambda m: f"{m.group(1)}-{REDACTED}", s)
        if home and home not in ("/", "") and len(home) > 1:
            s = re.sub(re.escape(home) + r"(?=/|$|\W)", "~", s)
        for h in hosts:
            if len(h) >= 3:
                s = re.sub(r"(?<![\w.-])" + re.escape(h) + r"(?![\w-])", REDACTED, s)
        return s

    return text


def redact_dict(data: dict, home: Optional[str] = None, hostnames: Iterable[str] = ()) -> dict:
    """Return a redacted deep copy of a snapshot-shaped dict (or a report holding one under "snapshot")."""
    hosts = list(hostnames)
    for part in (data, data.get("snapshot") if isinstance(data, dict) else None):
        platform = part.get("platform") if isinstance(part, dict) else None
        if isinstance(platform, dict) and platform.get("hostname"):
            hosts.append(str(platform["hostname"]))
    text = text_redactor(home, hosts)

    def walk(obj: Any, key: str = "", parent: str = "") -> Any:
        if isinstance(obj, dict):
            out = {}
            for k, v in obj.items():
                if k in _SECRET_KEYS and isinstance(v, str) and v:
                    out[k] = REDACTED
                elif k == "hostname" and isinstance(v, str) and v:
                    out[k] = REDACTED
                elif k in ("gpu_env", "env") and isinstance(v, dict):
                    out[k] = {ek: text(redact_value_for_env(ek, str(ev))) for ek, ev in v.items()}
                else:
                    out[k] = walk(v, k, key)
            return out
        if isinstance(obj, list):
            return [walk(v, key, parent) for v in obj]
        if isinstance(obj, str):
            return text(obj)
        return obj

    out = walk(data)
    if isinstance(out, dict) and "redacted" in out:
        out["redacted"] = True
    return out


__all__ = ["redact_dict", "redact_value_for_env", "REDACTED"]
