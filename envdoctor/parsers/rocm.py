"""ROCm versions and GPU names: /opt/rocm/.info/version, rocm_version.h, rocm-smi, amd-smi.

Pure functions; garbage returns None / [] (the contract is in envdoctor/parsers/__init__.py).
- .info/version: one line, "6.1.0-82" -> "6.1.0" (the build number after '-' is dropped).
- include/rocm-core/rocm_version.h: ROCM_VERSION_MAJOR / _MINOR / _PATCH defines.
- `rocm-smi --showproductname`: the text form ("GPU[0] : Card series: Fiji [...]"), the
  `--csv` form ("device,Card series,Card model,...") and the `--json` form
  ({"card0": {"Card Series": ..., "Card Model": ...}}).
- `amd-smi static`: "GPU: 0" blocks with "MARKET_NAME: AMD Instinct MI350X".
"""
from __future__ import annotations

import json
import re
from typing import Dict, List, Optional

from envdoctor.parsers import NUM, ascii_int, checked_text
from envdoctor.parsers.cudnn_header import define_int
from envdoctor.lazyre import lazy_re

_VERSION = rf"{NUM}\.{NUM}(?:\.{NUM})?"


def parse_rocm_info_version(text: Optional[str]) -> Optional[str]:
    text = checked_text(text)
    if text is None:
        return None
    first = text.strip().splitlines()[0].strip()
    m = re.match(rf"^({_VERSION})(?:[-.][0-9A-Za-z.]+)?$", first, re.ASCII)
    return m.group(1) if m else None


def parse_rocm_version_h(text: Optional[str]) -> Optional[str]:
    text = checked_text(text)
    if text is None:
        return None
    vals = {}
    for part in ("MAJOR", "MINOR", "PATCH"):
        value = define_int(text, f"ROCM_VERSION_{part}")
        if value is not None:
            vals[part] = str(value)
    if "MAJOR" not in vals or "MINOR" not in vals:
        return None
    return ".".join([vals["MAJOR"], vals["MINOR"]] + ([vals["PATCH"]] if "PATCH" in vals else []))


def _is_pci_id(value: str) -> bool:
    return bool(re.fullmatch(r"0x[0-9a-fA-F]+", value.strip(), re.ASCII))


def _pick_name(fields: Dict[str, str]) -> Optional[str]:
    """Prefer a model that is a name ("Radeon R9 FURY X"), else the series ("Arcturus GL-XL
    [AMD Instinct MI100]" when the model is a PCI id), else whatever was printed (ROCm 4
    prints bare PCI ids for both)."""
    series = (fields.get("card series") or fields.get("device name") or "").strip()
    model = (fields.get("card model") or "").strip()
    for cand in (model, series):
        if cand and cand.upper() != "N/A" and not _is_pci_id(cand):
            return cand
    return series or model or None


def parse_rocm_smi_productname(text: Optional[str]) -> List[str]:
    text = checked_text(text)
    if text is None:
        return []
    stripped = text.strip()
    if stripped.startswith("{"):
        return _from_json(stripped)
    if stripped.lower().startswith("device,"):
        return _from_csv(stripped)
    return _from_text(text)


def _from_json(text: str) -> List[str]:
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return []
    if not isinstance(data, dict):
        return []
    out: List[str] = []
    cards = {}
    for k in data:
        n = ascii_int(str(k)[4:]) if str(k).startswith("card") else None
        if n is not None:
            cards[n] = k
    for key in (cards[n] for n in sorted(cards)):
        entry = data[key]
        if not isinstance(entry, dict):
            continue
        fields = {str(k).strip().lower(): str(v) for k, v in entry.items()}
        name = _pick_name(fields)
        if name:
            out.append(name)
    return out


def _from_csv(text: str) -> List[str]:
    import csv  # only for amd-smi's CSV output: not at import
    import io

    try:
        rows = list(csv.reader(io.StringIO(text)))
    except csv.Error:
        return []
    if not rows:
        return []
    header = [h.strip().lower() for h in rows[0]]
    out: List[str] = []
    for row in rows[1:]:
        if not row or not row[0].strip().startswith("card"):
            continue
        fields = {header[i]: row[i] for i in range(min(len(header), len(row)))}
        name = _pick_name(fields)
        if name:
            out.append(name)
    return out


_TEXT_RE = lazy_re(rf"^\s*GPU\[({NUM})\]\s*:\s*([^:]+?)\s*:\s*(.*?)\s*$", re.ASCII)


def _from_text(text: str) -> List[str]:
    cards: Dict[int, Dict[str, str]] = {}
    for line in text.splitlines():
        m = _TEXT_RE.match(line)
        if not m:
            continue
        idx, key, value = int(m.group(1)), m.group(2).strip().lower(), m.group(3)
        cards.setdefault(idx, {})[key] = value
    out: List[str] = []
    for idx in sorted(cards):
        name = _pick_name(cards[idx])
        if name:
            out.append(name)
    return out


def parse_amd_smi_static(text: Optional[str]) -> List[str]:
    """MARKET_NAME of each "GPU: N" block of `amd-smi static` (or `amd-smi static --asic`)."""
    text = checked_text(text)
    if text is None:
        return []
    names: Dict[int, str] = {}
    current: Optional[int] = None
    for line in text.splitlines():
        m = re.match(rf"^GPU:\s*({NUM})\s*$", line.strip(), re.ASCII)
        if m and not line.startswith((" ", "\t")):
            current = int(m.group(1))
            continue
        m = re.match(r"^\s+MARKET_NAME:\s*(.*?)\s*$", line)
        if m and current is not None and m.group(1) and m.group(1).upper() != "N/A":
            names.setdefault(current, m.group(1))
    return [names[i] for i in sorted(names)]
