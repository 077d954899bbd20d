"""matrices/runtime_env.toml: PYTORCH_CUDA_ALLOC_CONF keys and first NumPy-2 builds (read once)."""
from __future__ import annotations

import functools
from typing import Any, Dict


@functools.lru_cache(maxsize=1)
def runtime_data() -> Dict[str, Any]:
    try:
        import tomllib  # type: ignore[import-not-found]
    except ImportError:  # Python < 3.11
        import tomli as tomllib  # type: ignore[no-redef]
    from envdoctor.knowledge.load import bundled_dir

    path = bundled_dir() / "runtime_env.toml"
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def alloc_keys() -> Dict[str, dict]:
    return {row["key"]: row for row in runtime_data().get("alloc_key", []) if isinstance(row, dict) and "key" in row}


def numpy2_rows() -> Dict[str, dict]:
    return {row["framework"]: row for row in runtime_data().get("numpy2", []) if isinstance(row, dict)}
