"""matrices/runtime_env.toml (PYTORCH_CUDA_ALLOC_CONF keys, first NumPy-2 builds) and matrices/runtimes.toml
(deployment runtimes: TensorRT, torch's ONNX exporter), each read once."""
from __future__ import annotations

import functools
from typing import Any, Dict, List


@functools.lru_cache(maxsize=4)
def _bundled_toml(name: str) -> Dict[str, Any]:
    # through the parse cache, as the other tables: no TOML parser imported or run on a hit
    from envdoctor.knowledge.load import bundled_dir, parse_toml_cached

    path = bundled_dir() / name
    try:
        return parse_toml_cached(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def runtime_data() -> Dict[str, Any]:
    return _bundled_toml("runtime_env.toml")


def runtimes_rows(table: str) -> List[dict]:
    """The rows of one table of matrices/runtimes.toml."""
    return [row for row in _bundled_toml("runtimes.toml").get(table, []) if isinstance(row, dict)]


def alloc_keys() -> Dict[str, dict]:
    return {row["key"]: row for row in runtime_data().get("alloc_key", []) if isinstance(row, dict) and "key" in row}


def numpy2_rows() -> Dict[str, dict]:
    return {row["framework"]: row for row in runtime_data().get("numpy2", []) if isinstance(row, dict)}
