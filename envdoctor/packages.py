"""A package that is also a function of the Python API: ``envdoctor.lock(...)`` and ``envdoctor.gate(...)``.

`envdoctor.lock` names the subpackage once anything imports it (the import system sets the attribute), so the
function cannot simply sit beside it in envdoctor/__init__.py; instead the subpackage's module answers a call as
envdoctor.api's function of the same name does, and ``inspect.signature`` (a notebook's ``envdoctor.lock?``) shows
that function's. Light: imported by the subpackages' ``__init__``, it loads envdoctor.api only when called.
"""
from __future__ import annotations

import sys
import types
from typing import Any


class _CallablePackage(types.ModuleType):
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return _function(self)(*args, **kwargs)

    @property
    def __signature__(self) -> Any:
        import inspect

        return inspect.signature(_function(self))


def _function(module: types.ModuleType) -> Any:
    from envdoctor import api

    return getattr(api, module.__name__.rpartition(".")[2])


def call_as(module_name: str) -> None:
    """Make the (sub)package `module_name` callable as envdoctor.api's function of its last name."""
    sys.modules[module_name].__class__ = _CallablePackage
