"""Where the files that ship beside the code live: matrices/ and templates/.

In an installed wheel they are `envdoctor/_data/<name>` (pyproject's force-include);
in a checkout or an editable install they are the top-level `<repo>/<name>` folders.
"""
from __future__ import annotations

from pathlib import Path


def data_dir(name: str) -> Path:
    pkg = Path(__file__).resolve().parent
    inside = pkg / "_data" / name
    if inside.is_dir():
        return inside
    return pkg.parent / name
