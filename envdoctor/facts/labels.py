"""How findings name things and cite where a fact was read.

Owns: `fw_label` ("torch 2.1.0+cu121"), `fw_source` (where the probe read a framework), `fw_build_source`
(where its build's own facts were read), `driver_source` (where the driver's facts were read), and
`row_source` / `row_src` (the source a matrix row cites).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from envdoctor.snapshot import Framework, Snapshot

__all__ = ["driver_source", "fw_build_source", "fw_label", "fw_source", "row_source", "row_src"]


def fw_label(fw: "Framework") -> str:
    """"torch 2.1.0+cu121": the distribution (else the framework's name) and its version."""
    return f"{fw.distribution or fw.name} {fw.version}"


def fw_source(fw: "Framework") -> str:
    """Where the probe read this framework: its first evidence source that names one, else its location, else the
    package list it came from."""
    for ev in fw.evidence:
        if ev.source:
            return ev.source
    if fw.location:
        return f"python:{fw.location}"
    return f"python.packages:{fw.distribution or fw.name}"


def fw_build_source(fw: "Framework") -> str:
    """Where the build's own facts were read (torch/version.py, build_info.py, a plugin's version.py)."""
    for ev in fw.evidence:
        if ev.source and not ev.source.endswith("METADATA"):
            return ev.source
    return fw_source(fw)


def driver_source(snap: "Snapshot") -> str:
    """Where the driver's facts were read: its first evidence source, else the probe's source."""
    for ev in snap.driver.evidence:
        if ev.source:
            return ev.source
    return snap.driver.source or "probe:nvidia"


def row_source(matrices: Any, row: Any, default: str = "matrices") -> str:
    """The source a matrix row cites (for a finding's evidence); `default` when there is none."""
    if matrices is None or row is None:
        return default
    try:
        return str(matrices.row_source(row))
    except Exception:  # noqa: BLE001 - a row from an older cache may lack fields
        return str(getattr(row, "source", "") or default)


def row_src(ctx: Any, row: Any) -> str:
    """`row_source` with the context's matrices, "" when the row cites nothing."""
    return row_source(ctx.matrices, row, default="")
