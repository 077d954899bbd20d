"""Where envdoctor keeps its user cache: one small module, so that a probe (the binaries scan's
`binaries.json`) finds it without importing envdoctor.knowledge (~9 ms: the tables, the matrices'
classes), which `probe` never needs. envdoctor.knowledge.load re-exports it."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping, Optional

__all__ = ["default_cache_dir"]


def default_cache_dir(env: Optional[Mapping[str, str]] = None) -> Path:
    """``$ENVDOCTOR_CACHE_DIR/matrices``, else ``$XDG_CACHE_HOME/envdoctor/matrices``, else ``~/.cache/envdoctor/matrices``."""
    environ = os.environ if env is None else env
    root = environ.get("ENVDOCTOR_CACHE_DIR")
    if root:
        return Path(root) / "matrices"
    xdg = environ.get("XDG_CACHE_HOME")
    if xdg:
        return Path(xdg) / "envdoctor" / "matrices"
    home = environ.get("HOME")
    base = Path(home) if home else Path.home()
    return base / ".cache" / "envdoctor" / "matrices"
