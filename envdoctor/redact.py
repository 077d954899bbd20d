"""Redaction of sensitive values in every output of every command (unless --no-redact).

One redactor (`Redactor.text`) does it all; `redact_output` applies it to a command's finished
output (probe, check, gate, smoke, lock, onboard: text, JSON, Markdown, HTML), `redact_dict` to
snapshot- and report-shaped dicts before they are rendered. What is redacted:

- by name: values of environment variables whose name says secret (TOKEN, SECRET, PASSWORD,
  PASSPHRASE, PASS, PWD, KEY, CREDENTIAL, AUTH, COOKIE, SESSION, PRIVATE ...), in dicts and in
  `NAME=value` text; dict values under "uuid", "serial", "hostname";
- by value shape: GPU and MIG UUIDs (also short GPU-<hex> prefixes and MIG-GPU-<uuid>/gi/ci),
  plain UUIDs, credentials in URLs (`user:pass@` and token-only `TOKEN@`), "Serial Number: ..."
  lines, well-known token prefixes (ghp_, hf_, glpat-, xoxb-, sk-, pypi-, AKIA...) and long
  high-entropy words (32+ characters mixing upper and lower case and digits, not hex);
- by value: the home directory (shown as ~), the host names, and the exact values found as
  secrets in the snapshot (GPU serials and UUIDs) and in this process's environment, wherever
  they appear in free text.

Never redacted: versions, sm_XX, paths outside the home directory, and hex digests (wheel
hashes such as `--hash=sha256:<hex>` in lock files, git commits): they are not secrets.
"""
from __future__ import annotations

import os
import re
from typing import Any, Iterable, Mapping, Optional, Set

REDACTED = "<redacted>"
REDACTED_HTML = "&lt;redacted&gt;"

_HEX = "[0-9a-fA-F]"
_UUID = rf"{_HEX}{{8}}(?:-{_HEX}{{4}}){{3}}-{_HEX}{{12}}"
# GPU-<uuid>, a unique GPU-<hex> prefix (CUDA_VISIBLE_DEVICES accepts those), MIG-<uuid>, MIG-GPU-<uuid>/1/2
_GPU_ID_RE = re.compile(rf"\b(GPU|MIG)-(?:GPU-)?{_HEX}{{8}}[0-9a-fA-F-]*(?:/[0-9]+/[0-9]+)?(?![\w-])")
_UUID_RE = re.compile(rf"(?<![\w-]){_UUID}(?![\w-])")
_SECRET_NAME_RE = re.compile(
    r"TOKEN|SECRET|PASSW|PASSPHRASE|(?:^|_)PASS(?:$|_)|(?:^|_)PWD(?:$|_)|CREDENTIAL|AUTH(?!OR)|API_?KEY|"
    r"(?:^|_)KEY(?:$|_)|ACCESS_?KEY|PRIVATE|COOKIE|SESSION|SIGNATURE",
    re.IGNORECASE,
)
_NOT_SECRET_NAMES = {"PWD", "OLDPWD"}  # the shell's current and previous directory
# scheme://user:pass@ and scheme://TOKEN@ (ssh's plain "git@" is a user name, not a secret)
_URL_CRED_RE = re.compile(r"(://)(?!git@)[^/@\s\"'<>]+@")
_ENV_ASSIGN_RE = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)=([^\s\"'<>&;|]+)")
_SERIAL_RE = re.compile(r"(\bSerial(?: Number)?\s*[:=]\s*)([A-Za-z0-9-]{4,})", re.IGNORECASE)
_TOKEN_PREFIX_RE = re.compile(
    r"(?<![\w-])(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|glpat-[A-Za-z0-9_-]{20,}|hf_[A-Za-z0-9]{20,}"
    r"|xox[abprs]-[A-Za-z0-9-]{10,}|sk-[A-Za-z0-9_-]{20,}|pypi-[A-Za-z0-9_-]{20,}|AKIA[0-9A-Z]{16})(?![\w-])"
)
_LONG_WORD_RE = re.compile(r"(?<![\w+/=-])([A-Za-z0-9_-]{32,})(?![\w+/=-])")
# What the patterns need, for Redactor.text to skip those that cannot match: the literal prefixes of
# _TOKEN_PREFIX_RE; for ASCII text, 32 characters of _LONG_WORD_RE's class in a row, and 8 hex digits and a dash
# (_UUID_RE), seen in the text translated to "w" (word class), "h" (hex), "-" and " " (anything else).
_TOKEN_PREFIXES = ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-", "hf_", "xoxa-", "xoxb-", "xoxp-",
                   "xoxr-", "xoxs-", "sk-", "pypi-", "AKIA")
_WORD_CHARS = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"
_WORD_MAP = bytes(ord("w") if b in _WORD_CHARS else ord(" ") for b in range(256))
_HEX_MAP = bytes(ord("h") if b in b"0123456789abcdefABCDEF" else ord("-") if b == ord("-") else ord(" ")
                 for b in range(256))
_WORD_RUN = b"w" * 32
_HEX_RUN = b"h" * 8 + b"-"
_DIGEST_BEFORE_RE = re.compile(r"(?:sha(?:1|224|256|384|512)|md5|blake2b)[:=]$", re.IGNORECASE)
_SECRET_KEYS = {"uuid", "serial"}
_ENV_KEYS = ("gpu_env", "env")
_MIN_SECRET_LEN = 6  # shorter values ("0", "1", "yes") would redact half of every output


def _could_hold(s: str, table: bytes, run: bytes) -> bool:
    """Whether `s` could hold a match needing `run` in `s` translated by `table` (always, for non-ASCII text)."""
    return not s.isascii() or run in s.encode("ascii").translate(table)


def is_secret_name(name: str) -> bool:
    return name.upper() not in _NOT_SECRET_NAMES and bool(_SECRET_NAME_RE.search(name))


def _high_entropy(word: str) -> bool:
    if re.fullmatch(r"[0-9a-fA-F_-]+", word):  # digests, commits, UUID-like ids without dashes
        return False
    return bool(re.search(r"[a-z]", word) and re.search(r"[A-Z]", word) and re.search(r"[0-9]", word))


class Redactor:
    """Redacts one string at a time; built once per output from what is secret on this machine."""

    def __init__(self, home: Optional[str] = None, hostnames: Iterable[str] = (), secrets: Iterable[str] = (),
                 marker: str = REDACTED) -> None:
        self.home = home if home is not None else os.path.expanduser("~")
        self.hosts = sorted({h for h in hostnames if h and len(h) >= 3 and h.lower() != "localhost"}, key=len, reverse=True)
        self.secrets = sorted({s for s in secrets if isinstance(s, str) and len(s) >= _MIN_SECRET_LEN
                               and REDACTED not in s}, key=len, reverse=True)
        self.marker = marker

    def text(self, s: str) -> str:
        if not s:
            return s
        mark = self.marker
        # Each pattern runs only where the text could hold a match (the seven patterns scanned every
        # output in full, ~3 ms a check): a literal it needs, or for ASCII text a run of the characters it needs
        # (_could_hold), tested on the text as that pattern gets it. Skipping a pattern that cannot match changes
        # nothing; tests/test_redaction.py compares this with running every pattern.
        if "GPU-" in s or "MIG-" in s:
            s = _GPU_ID_RE.sub(lambda m: f"{m.group(1)}-{mark}", s)
        if _could_hold(s, _HEX_MAP, _HEX_RUN):
            s = _UUID_RE.sub(mark, s)
        if "://" in s:
            s = _URL_CRED_RE.sub(lambda m: m.group(1) + mark + "@", s)
        if "=" in s:
            s = _ENV_ASSIGN_RE.sub(lambda m: f"{m.group(1)}={mark}" if is_secret_name(m.group(1)) and m.group(2) != mark
                                   else m.group(0), s)
        if not s.isascii() or "serial" in s.lower():  # IGNORECASE: ASCII text lower-cased holds it
            s = _SERIAL_RE.sub(lambda m: m.group(1) + mark, s)
        if any(p in s for p in _TOKEN_PREFIXES):
            s = _TOKEN_PREFIX_RE.sub(mark, s)
        if _could_hold(s, _WORD_MAP, _WORD_RUN):
            s = _LONG_WORD_RE.sub(lambda m: mark if _high_entropy(m.group(1))
                                  and not _DIGEST_BEFORE_RE.search(s[max(0, m.start() - 8):m.start()])
                                  else m.group(0), s)
        for secret in self.secrets:  # after the shapes: "GPU-<uuid>" stays "GPU-<redacted>"
            if secret in s:
                s = s.replace(secret, mark)
        home = self.home
        if home and home not in ("/", "") and len(home) > 1 and home.rstrip("/") in s:
            s = re.sub(re.escape(home.rstrip("/")) + r"(?=/|$|\W)", "~", s)
        for h in self.hosts:
            if h in s and h != mark:  # the marker for the marker: nothing would change
                s = re.sub(r"(?<![\w.-])" + re.escape(h) + r"(?![\w-])", mark, s)
        return s

    def env_value(self, name: str, value: str) -> str:
        return self.marker if is_secret_name(name) and value else self.text(value)

    def dict(self, data: Any) -> Any:
        """A redacted deep copy of a snapshot- or report-shaped value."""

        def walk(obj: Any) -> Any:
            if isinstance(obj, dict):
                out: dict[Any, Any] = {}
                for k, v in obj.items():
                    if k in _SECRET_KEYS and isinstance(v, str) and v:
                        out[k] = self.marker
                    elif k == "hostname" and isinstance(v, str) and v:
                        out[k] = self.marker
                    elif k in _ENV_KEYS and isinstance(v, dict):
                        out[k] = {ek: self.env_value(str(ek), str(ev)) for ek, ev in v.items()}
                    else:
                        out[k] = walk(v)
                if set(out) >= {"name", "value"} and isinstance(out.get("name"), str) and isinstance(obj.get("value"), str):
                    out["value"] = self.env_value(out["name"], obj["value"])  # {"name": VAR, "value": ...} rows
                return out
            if isinstance(obj, list):
                return [walk(v) for v in obj]
            if isinstance(obj, tuple):
                return tuple(walk(v) for v in obj)
            if isinstance(obj, str):
                return self.text(obj)
            return obj

        return walk(data)


# -- what is secret here ------------------------------------------------------------------------


def secrets_in(data: Any) -> Set[str]:
    """Exact secret values in a snapshot(-shaped dict or Snapshot): GPU serials and UUIDs, host names,
    values of secret-named environment variables."""
    if data is not None and hasattr(data, "to_dict") and not isinstance(data, dict):
        data = data.to_dict()
    found: Set[str] = set()

    def walk(obj: Any) -> None:
        if isinstance(obj, dict):
            for k, v in obj.items():
                if k in _SECRET_KEYS | {"hostname"} and isinstance(v, str) and v and REDACTED not in v:
                    found.add(v)
                elif k in _ENV_KEYS and isinstance(v, dict):
                    found.update(str(ev) for ek, ev in v.items() if is_secret_name(str(ek)))
                else:
                    walk(v)
        elif isinstance(obj, (list, tuple)):
            for v in obj:
                walk(v)

    walk(data)
    return found


def hostnames_in(data: Any) -> Set[str]:
    hosts: Set[str] = set()
    if data is not None and hasattr(data, "to_dict") and not isinstance(data, dict):
        data = data.to_dict()
    for part in (data, data.get("snapshot") if isinstance(data, dict) else None):
        platform = part.get("platform") if isinstance(part, dict) else None
        if isinstance(platform, dict) and platform.get("hostname"):
            hosts.add(str(platform["hostname"]))
    return hosts


def environment_secrets(env: Optional[Mapping[str, str]] = None) -> Set[str]:
    """Values of this process's secret-named environment variables."""
    env = os.environ if env is None else env
    return {v for k, v in env.items() if v and is_secret_name(k)}


def _this_host() -> Set[str]:
    try:  # uname's node name is what gethostname() returns on POSIX, without importing socket (~2 ms per start)
        name = os.uname().nodename if hasattr(os, "uname") else __import__("socket").gethostname()
    except OSError:
        return set()
    return {name, name.split(".")[0]} if name else set()


def redactor_for(snapshot: Any = None, env: Optional[Mapping[str, str]] = None, home: Optional[str] = None,
                 marker: str = REDACTED) -> Redactor:
    """The redactor of this machine: the snapshot's secrets, the environment's, this host's name, the home dir."""
    if snapshot is not None and hasattr(snapshot, "to_dict") and not isinstance(snapshot, dict):
        snapshot = snapshot.to_dict()  # once, for both readers below
    return Redactor(home=home, hostnames=hostnames_in(snapshot) | _this_host(),
                    secrets=secrets_in(snapshot) | environment_secrets(env), marker=marker)


def redact_output(text: str, snapshot: Any = None, html: bool = False, env: Optional[Mapping[str, str]] = None) -> str:
    """THE redaction every command's output goes through before it is printed or written."""
    return redactor_for(snapshot, env=env, marker=REDACTED_HTML if html else REDACTED).text(text)


# -- the older entry points, on the same redactor -----------------------------------------------


def redact_value_for_env(name: str, value: str) -> str:
    return Redactor(home="", secrets=()).env_value(name, value)


def text_redactor(home: Optional[str] = None, hostnames: Iterable[str] = ()):
    """A function that redacts one string (see Redactor.text)."""
    return Redactor(home=home, hostnames=hostnames).text


def redact_dict(data: dict, home: Optional[str] = None, hostnames: Iterable[str] = ()) -> dict:
    """Return a redacted deep copy of a snapshot-shaped dict (or a report holding one under "snapshot")."""
    r = Redactor(home=home, hostnames=set(hostnames) | hostnames_in(data), secrets=secrets_in(data))
    out = r.dict(data)
    if isinstance(out, dict) and "redacted" in out:
        out["redacted"] = True
    return out


__all__ = ["REDACTED", "Redactor", "redact_dict", "redact_output", "redact_value_for_env", "redactor_for",
           "is_secret_name", "text_redactor"]
