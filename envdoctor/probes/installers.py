"""Who installed what in the target environment: pip next to conda.

Each distribution's INSTALLER file (pip, conda, uv ...; read by the pyenv helper) and the conda-meta
records (<prefix>/conda-meta/<name>-<version>-<build>.json, conda's PrefixRecord) of the GPU-relevant
conda packages: cudatoolkit / cuda-* / cudnn / nccl, pytorch / pytorch-cuda / libtorch, tensorflow, jax,
numpy. A distribution found twice on sys.path is recorded with each copy, the imported one first.
"""
from __future__ import annotations

import json
import os
from typing import Dict, List, Tuple

from envdoctor.probes.base import ProbeContext, ProbeSkipped
from envdoctor.snapshot import CondaPackage, Evidence, Snapshot
from envdoctor.lazyre import lazy_re

MAX_META_FILES = 4096
MAX_META_BYTES = 8 * 1024 * 1024
RELEVANT = lazy_re(r"^(cudatoolkit|cuda-[a-z0-9-]+|cudnn|nccl|pytorch(-cuda|-gpu|-cpu)?|libtorch|torchvision|"
                      r"tensorflow(-gpu|-base)?|jax|jaxlib|cupy|numpy|numpy-base)-[^-]+-[^-]+\.json$")


def installer_facts(data: dict) -> Tuple[Dict[str, str], Dict[str, List[str]]]:
    """From the pyenv helper's answer: dist -> INSTALLER, and dists with more than one copy on sys.path."""
    installers: Dict[str, str] = {}
    copies: Dict[str, List[str]] = {}
    for d in data.get("dists") or []:
        if not isinstance(d, dict):
            continue
        norm = str(d.get("normalized") or d.get("name") or "")
        if d.get("installer") and norm and norm not in installers:
            installers[norm] = str(d["installer"])[:40]
        others = [o for o in d.get("shadowed") or [] if isinstance(o, dict)]
        if others and norm:
            copies[norm] = [f"{d.get('version')} at {d.get('location')} (imported)"] + [
                f"{o.get('version')} at {o.get('location')}" for o in others[:8]]
    return installers, copies


def probe(ctx: ProbeContext, snap: Snapshot) -> None:
    prefix = snap.python.prefix
    if not prefix:
        raise ProbeSkipped("no target Python environment")
    meta = os.path.join(prefix, "conda-meta")
    if not os.path.isdir(meta):
        return
    inst = snap.installers
    inst.conda_prefix = prefix
    try:
        names = sorted(os.listdir(meta))[:MAX_META_FILES]
    except OSError as exc:
        inst.evidence.append(Evidence(f"file:{meta}", f"cannot list: {exc.strerror or exc}"))
        return
    for fn in names:
        if not RELEVANT.match(fn):
            continue
        path = os.path.join(meta, fn)
        try:
            if os.path.getsize(path) > MAX_META_BYTES:
                inst.evidence.append(Evidence(f"file:{path}", f"not read: larger than {MAX_META_BYTES} bytes"))
                continue
            with open(path, "rb") as fh:
                data = json.loads(fh.read().decode("utf-8", errors="replace"))
        except (OSError, ValueError, RecursionError) as exc:
            inst.evidence.append(Evidence(f"file:{path}", f"not read: {exc}"[:200]))
            continue
        if not isinstance(data, dict) or not isinstance(data.get("name"), str):
            continue
        channel = str(data.get("channel") or "")
        inst.conda_packages.append(CondaPackage(name=data["name"], version=str(data.get("version") or ""),
                                                build=str(data.get("build") or ""), channel=channel.rstrip("/"),
                                                file=path))
    if inst.conda_packages:
        inst.evidence.append(Evidence(f"file:{meta}", ", ".join(
            f"{p.name} {p.version} {p.build}" for p in inst.conda_packages)[:600]))
