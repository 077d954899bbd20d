"""Format names -> the modules that render them, imported only when a format is used (`check`'s start-up loads
none of them). A new format is one module and one line here; `check` and `gate` offer every name in FORMATS.

Kept free of heavy imports (and of click): `check` and `gate` build their `--format` option from it at import time
(envdoctor.cli_options.format_option).
"""
from __future__ import annotations

import importlib
import time
from typing import Any, Dict, List

from envdoctor.errors import BadInput

FORMATS: Dict[str, str] = {
    "text": "envdoctor.formats.text",
    "json": "envdoctor.formats.json",
    "markdown": "envdoctor.formats.markdown",
    "junit": "envdoctor.formats.junit",
    "github": "envdoctor.formats.github",
    "sarif": "envdoctor.formats.sarif",
    "prometheus": "envdoctor.formats.prometheus",
}


def names() -> List[str]:
    return list(FORMATS)


def register(name: str, module: str) -> None:
    """Offer format `name`, rendered by `module` (imported when the format is first used)."""
    FORMATS[name] = module


def get(name: str) -> Any:
    """The format called `name`: an object with ``name``, ``description`` and ``render(doc, options)``."""
    if name not in FORMATS:
        raise BadInput(f"unknown format {name!r} (formats: {', '.join(FORMATS)})")
    fmt = importlib.import_module(FORMATS[name])
    if not callable(getattr(fmt, "render", None)):
        raise BadInput(f"format {name!r}: {FORMATS[name]} has no render(doc, options)")
    return fmt


def render(fmt: str, doc: Any, **options: Any) -> str:
    """`doc` (an envdoctor.formats.interface.FindingsDoc) in format `fmt`; options as RenderOptions' fields (the
    time of the judgement is now unless given)."""
    from envdoctor.formats.interface import RenderOptions  # the findings model: only when a format renders

    options.setdefault("timestamp", time.time())
    return get(fmt).render(doc, RenderOptions(**options))
