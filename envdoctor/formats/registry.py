"""Format names -> the modules that render them, imported only when a format is used (`check`'s start-up loads
none of them). A new format is one module and one line here; `check` and `gate` offer every name in FORMATS.

Kept free of heavy imports: `check` and `gate` build their `--format` option from it at import time.
"""
from __future__ import annotations

import importlib
from typing import Any, Dict, List

import click

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
    from envdoctor.errors import BadInput

    if name not in FORMATS:
        raise BadInput(f"unknown format {name!r} (formats: {', '.join(FORMATS)})")
    fmt = importlib.import_module(FORMATS[name])
    if not callable(getattr(fmt, "render", None)):
        raise BadInput(f"format {name!r}: {FORMATS[name]} has no render(doc, options)")
    return fmt


class FormatChoice(click.Choice):
    """`--format` over the registry's names as they are when the command line is parsed (so a format registered
    after the command was defined is offered and accepted)."""

    name = "format"

    def __init__(self) -> None:
        super().__init__(names())

    @property
    def choices(self):  # noqa: D401 - click reads self.choices
        return tuple(FORMATS)

    @choices.setter
    def choices(self, value) -> None:  # click.Choice.__init__ assigns it; the registry is the truth
        pass


def format_option(default: str = "text"):
    """The `--format` option of every command that reports findings."""
    return click.option("--format", "fmt", type=FormatChoice(), default=default, show_default=True,
                        help="Output format (the formats registered in envdoctor.formats.registry).")


def render(fmt: str, doc: Any, **options: Any) -> str:
    """`doc` (an envdoctor.formats.interface.FindingsDoc) in format `fmt`; options as RenderOptions' fields (the
    time of the judgement is now unless given)."""
    import time

    from envdoctor.formats.interface import RenderOptions

    options.setdefault("timestamp", time.time())
    return get(fmt).render(doc, RenderOptions(**options))
