"""The packages that constrain a framework indirectly (matrices/gate_indirect.toml): xformers, triton, flash-attn,
vllm ...  Their wheels pin the torch (or TensorFlow) they were built for, so without their metadata (``--offline``)
the torch an install gets is not known: the offline planner lists such lines as not judged instead of ignoring them."""
from __future__ import annotations

import functools
from typing import Any, Dict, Optional

from packaging.utils import canonicalize_name


@functools.lru_cache(maxsize=1)
def indirect_rows() -> Dict[str, Dict[str, Any]]:
    from envdoctor.knowledge.load import parse_toml_cached
    from envdoctor.resources import data_dir

    path = data_dir("matrices") / "gate_indirect.toml"
    try:
        data = parse_toml_cached(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {str(canonicalize_name(r["name"])): dict(r) for r in data.get("package", []) if isinstance(r, dict)
            and isinstance(r.get("name"), str)}


def indirect_row(name: str) -> Optional[Dict[str, Any]]:
    return indirect_rows().get(str(canonicalize_name(name)))
