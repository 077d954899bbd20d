"""nvidia-smi output: the plain banner table, `--query-gpu ... --format=csv` and failure messages.

Pure functions: text in, typed values out. Garbage returns None / empty; the contract (and
the one ParseError) is in envdoctor/parsers/__init__.py. Numbers are ASCII digits only.

Banner layouts handled (all seen in real outputs, see tests/fixtures/nvidia/):

- <= 3xx/4xx before 410: ``| NVIDIA-SMI 384.69   Driver Version: 384.69   |`` (no CUDA Version);
  very old ones print a 4-digit PCI domain (``0000:03:00.0``).
- 410 .. 530: ``| NVIDIA-SMI 470.63.01    Driver Version: 470.63.01    CUDA Version: 11.4     |``,
  450+ adds a third row per GPU (MIG M.).
- 535 .. 545: wider name column ``|   0  NVIDIA A10G      Off | 00000000:00:1E.0 Off |``.
- 550+: wider Bus-Id column; 580 puts a ``+---+`` border under the banner.
- R610+: ``| NVIDIA-SMI 610.43.02   KMD Version: 610.43.02   CUDA UMD Version: 13.3 |``.
- Windows / WSL: a ``TCC/WDDM`` column; in WSL the "Driver Version" is the Windows driver
  ("555.99") and differs from the NVIDIA-SMI (Linux userspace) version ("555.52.01").
- ``CUDA Version: N/A`` (no libcuda) and ``CUDA Version: ERR!`` give cuda_version None and keep
  the raw word in `cuda_version_raw`.

GPU names in the banner may be truncated ("NVIDIA GeForce ..."): `SmiGpuRow.name_truncated`.
The "MIG devices:" and "Processes:" tables are never taken for GPUs.
"""
from __future__ import annotations

import re
from typing import Dict, List, Optional, Sequence

from envdoctor.parsers import BUS_ID_RE, NUM, NUM_END, ascii_float, ascii_int, checked_text
from envdoctor.lazyre import lazy_re
from envdoctor.records import dataclass, field

_DRIVER_VERSION_RE = lazy_re(rf"^{NUM}(?:\.{NUM}){{1,3}}$", re.ASCII)
_CUDA_VERSION_RE = lazy_re(rf"^{NUM}\.{NUM}(?:\.{NUM})?$", re.ASCII)
_COMPUTE_CAP_RE = lazy_re(rf"^{NUM}\.{NUM}$", re.ASCII)
_UUID_RE = lazy_re(r"^(GPU|MIG)-[0-9A-Za-z-]+$", re.ASCII)

# Banner header fields. "Driver Version :" also matches the `nvidia-smi -q` log format.
_SMI_VERSION_RE = lazy_re(rf"NVIDIA-SMI\s+({NUM}(?:\.{NUM})+){NUM_END}", re.ASCII)
_DRIVER_RE = lazy_re(r"(?:Driver|KMD) Version\s*:\s*(\S+)")
_CUDA_RE = lazy_re(r"CUDA (?:UMD )?Version\s*:\s*(\S+)")

# One GPU row: "|   0  NVIDIA A10G     On  |   00000000:00:1E.0 Off |" (the Persistence-M or
# TCC/WDDM word ends the name cell, the PCI bus id starts the next one).
_GPU_ROW_RE = lazy_re(
    r"^\|\s*(?P<index>[0-9]+)\s+(?P<name>\S.*?)\s+(?P<mode>On|Off|N/A|WDDM|TCC|MCDM)\s*"
    r"\|\s*(?P<bus>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])\b",
    re.ASCII,
)
_MEMORY_RE = lazy_re(r"([0-9]+)\s*MiB\s*/\s*([0-9]+)\s*MiB", re.ASCII)

# CSV values that mean "no value".
_NA_VALUES = {"", "n/a", "[n/a]", "[not supported]", "not supported", "[unknown error]", "[insufficient permissions]",
              "[gpu is lost]", "[gpu requires reset]", "[unknown]"}
_UNIT_SUFFIX_RE = lazy_re(r"^(-?[0-9]+(?:\.[0-9]+)?)\s*(?:MiB|MB|GiB|W|MHz|%|C|KB/s)$", re.ASCII)


@dataclass
class SmiGpuRow:
    index: int
    name: str
    bus_id: str
    memory_total_mib: Optional[int] = None
    name_truncated: bool = False


@dataclass
class SmiBanner:
    smi_version: Optional[str] = None  # the "NVIDIA-SMI x" tool (userspace) version
    driver_version: Optional[str] = None  # "Driver Version:" (or R610+ "KMD Version:")
    cuda_version: Optional[str] = None  # None when absent, N/A or ERR!
    cuda_version_raw: Optional[str] = None  # the word as printed ("12.4", "N/A", "ERR!")
    gpus: List[SmiGpuRow] = field(default_factory=list)


@dataclass
class SmiFailure:
    """A failure message nvidia-smi printed.

    kind: module_not_loaded | version_mismatch | no_devices | nvml_missing | invalid_field |
          nvml_failed
    """

    kind: str
    message: str  # the line as printed
    lines: List[str] = field(default_factory=list)  # every failure line found, in order
    nvml_library_version: Optional[str] = None  # "NVML library version: 570.124" (newer drivers)


@dataclass
class SmiQueryGpu:
    index: Optional[int] = None
    name: Optional[str] = None
    compute_cap: Optional[str] = None
    memory_total_mib: Optional[int] = None
    bus_id: Optional[str] = None
    uuid: Optional[str] = None
    serial: Optional[str] = None
    driver_version: Optional[str] = None


def _text(value: object) -> Optional[str]:
    if isinstance(value, bytes):
        value = value.decode("utf-8", errors="replace")
    value = checked_text(value)
    if value is None or "\x00" in value:
        return None
    return value


def clean_driver_version(value: Optional[str]) -> Optional[str]:
    if not isinstance(value, str):
        return None
    value = value.strip()
    return value if _DRIVER_VERSION_RE.match(value) else None


def clean_cuda_version(value: Optional[str]) -> Optional[str]:
    if not isinstance(value, str):
        return None
    value = value.strip()
    return value if _CUDA_VERSION_RE.match(value) else None


def normalize_bus_id(bus_id: Optional[str]) -> str:
    """'00000000:17:00.0' / '0000:17:00.0' / '17:00.0' -> '0000:17:00.0' (lower case), for matching."""
    if not isinstance(bus_id, str):
        return ""
    m = re.match(r"^\s*(?:([0-9A-Fa-f]{1,8}):)?([0-9A-Fa-f]{1,2}):([0-9A-Fa-f]{1,2})\.([0-9A-Fa-f])\s*$", bus_id, re.ASCII)
    if not m:
        return bus_id.strip().lower()
    domain = int(m.group(1) or "0", 16)
    return f"{domain:04x}:{int(m.group(2), 16):02x}:{int(m.group(3), 16):02x}.{m.group(4).lower()}"


# -- banner -------------------------------------------------------------------------------


def parse_banner(text: Optional[str]) -> Optional[SmiBanner]:
    """Parse plain `nvidia-smi` output. None when no driver version is found (not a banner)."""
    text = _text(text)
    if text is None:
        return None
    banner = SmiBanner()
    lines = text.splitlines()
    for line in lines[:40]:
        if banner.smi_version is None:
            m = _SMI_VERSION_RE.search(line)
            if m:
                banner.smi_version = m.group(1)
        if banner.driver_version is None:
            m = _DRIVER_RE.search(line)
            if m:
                banner.driver_version = clean_driver_version(m.group(1))
        if banner.cuda_version_raw is None:
            m = _CUDA_RE.search(line)
            if m:
                raw = m.group(1).rstrip("|").strip()
                banner.cuda_version_raw = raw
                banner.cuda_version = clean_cuda_version(raw)
    if banner.driver_version is None:
        return None
    banner.gpus = _parse_gpu_rows(lines)
    return banner


def _parse_gpu_rows(lines: Sequence[str]) -> List[SmiGpuRow]:
    gpus: List[SmiGpuRow] = []
    seen = set()
    in_other_table = False
    for i, line in enumerate(lines):
        stripped = line.strip()
        if stripped.startswith("|") and ("MIG devices:" in stripped or "Processes:" in stripped):
            in_other_table = True
            continue
        if in_other_table:
            continue
        m = _GPU_ROW_RE.match(stripped)
        if not m:
            continue
        index = ascii_int(m.group("index"))
        if index is None or index in seen:
            continue
        seen.add(index)
        name = m.group("name").strip()
        memory = None
        if i + 1 < len(lines):
            mm = _MEMORY_RE.search(lines[i + 1])
            if mm:
                memory = ascii_int(mm.group(2))
        gpus.append(
            SmiGpuRow(
                index=index,
                name=name,
                bus_id=m.group("bus"),
                memory_total_mib=memory,
                name_truncated=name.endswith("..."),
            )
        )
    return gpus


# -- failure messages -----------------------------------------------------------------------

_FAILURES = (
    # (kind, needle) in order of precedence
    ("version_mismatch", "driver/library version mismatch"),
    ("module_not_loaded", "couldn't communicate with the nvidia driver"),
    ("module_not_loaded", "driver not loaded"),
    ("no_devices", "no devices were found"),
    ("nvml_missing", "couldn't find libnvidia-ml.so"),
    ("nvml_missing", "nvml shared library not found"),
    ("invalid_field", "is not a valid field to query"),
    ("nvml_failed", "failed to initialize nvml"),
    ("nvml_failed", "unable to determine the device handle"),
    ("nvml_failed", "gpu is lost"),
)
_NVML_LIB_RE = lazy_re(rf"NVML library version:\s*({NUM}(?:\.{NUM})+){NUM_END}", re.ASCII)


def detect_failure(text: Optional[str]) -> Optional[SmiFailure]:
    """Find nvidia-smi's failure message in its output (stdout and stderr together)."""
    text = _text(text)
    if text is None:
        return None
    found: List[tuple] = []  # (precedence, line_no, kind, line)
    for line_no, line in enumerate(text.splitlines()[:200]):
        low = line.strip().lower()
        if not low:
            continue
        for prec, (kind, needle) in enumerate(_FAILURES):
            if needle in low:
                found.append((prec, line_no, kind, line.strip()))
                break
    if not found:
        return None
    best = min(found)
    lib = _NVML_LIB_RE.search(text)
    return SmiFailure(
        kind=best[2],
        message=best[3],
        lines=[f[3] for f in sorted(found, key=lambda f: f[1])],
        nvml_library_version=lib.group(1) if lib else None,
    )


# -- --query-gpu CSV ------------------------------------------------------------------------


def _csv_value(raw: str) -> Optional[str]:
    value = raw.strip()
    if value.lower() in _NA_VALUES:
        return None
    return value


def _field_key(header_cell: str) -> str:
    """'memory.total [MiB]' -> 'memory.total'."""
    return re.sub(r"\s*\[[^\]]*\]\s*$", "", header_cell.strip()).strip().lower()


_ALIASES = {"gpu_name": "name", "gpu_uuid": "uuid", "gpu_bus_id": "pci.bus_id", "gpu_serial": "serial"}


def parse_query_csv(text: Optional[str], fields: Sequence[str]) -> List[Dict[str, Optional[str]]]:
    """Rows of `nvidia-smi --query-gpu=<fields> --format=csv[,noheader][,nounits]`.

    A header line (when present) decides the column order; otherwise `fields` does. Rows whose
    cell count does not match are skipped. "[N/A]", "[Not Supported]", "N/A" cells become None.
    """
    text = _text(text)
    if text is None or not fields:
        return []
    keys = [_ALIASES.get(f.strip().lower(), f.strip().lower()) for f in fields]
    rows: List[Dict[str, Optional[str]]] = []
    first = True
    for line in text.splitlines():
        if not line.strip():
            continue
        cells = [c.strip() for c in line.split(",")]
        if first:
            first = False
            header_keys = [_ALIASES.get(_field_key(c), _field_key(c)) for c in cells]
            if len(header_keys) == len(keys) and set(header_keys) == set(keys):
                keys = header_keys  # a header line: it gives the column order
                continue
        if len(cells) != len(keys):
            continue
        rows.append({k: _csv_value(c) for k, c in zip(keys, cells)})
    return rows


def _int_mib(value: Optional[str]) -> Optional[int]:
    """'24564', '24564 MiB', '81559.0' -> the whole MiB; None for negative, inf, nan, '²', huge."""
    if value is None:
        return None
    m = _UNIT_SUFFIX_RE.match(value.strip())
    number = ascii_float(m.group(1) if m else value)
    if number is None or number < 0:
        return None
    return ascii_int(str(int(number)))


def parse_query_gpus(text: Optional[str], fields: Sequence[str]) -> List[SmiQueryGpu]:
    """Typed GPUs from a --query-gpu CSV. Rows without a name nor a bus id nor a uuid are dropped."""
    out: List[SmiQueryGpu] = []
    for row in parse_query_csv(text, fields):
        gpu = SmiQueryGpu()
        gpu.index = ascii_int(row.get("index"))
        gpu.name = row.get("name")
        cc = row.get("compute_cap")
        gpu.compute_cap = cc if cc and _COMPUTE_CAP_RE.match(cc) else None
        gpu.memory_total_mib = _int_mib(row.get("memory.total"))
        bus = row.get("pci.bus_id")
        gpu.bus_id = bus if bus and BUS_ID_RE.match(bus) else None
        uuid = row.get("uuid")
        gpu.uuid = uuid if uuid and _UUID_RE.match(uuid) else None
        gpu.serial = row.get("serial")
        gpu.driver_version = clean_driver_version(row.get("driver_version"))
        if gpu.name is None and gpu.bus_id is None and gpu.uuid is None:
            continue
        out.append(gpu)
    return out
