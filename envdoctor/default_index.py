"""pip's built-in default package index, asked from the installed pip at run time.

envdoctor never writes a registry's host name itself: where it must recognise or
name "the default index" (a lock leaves it implicit, gate knows what it serves),
it asks pip. Without an importable pip both answers are empty, and callers treat
the default index as unknown.
"""
from __future__ import annotations

import functools
from typing import FrozenSet, Optional
from urllib.parse import urlparse

DEFAULT_INDEX_LABEL = "the default index"


@functools.lru_cache(maxsize=1)
def default_index() -> Optional[str]:
    """The simple-API URL pip uses when no index is configured."""
    try:
        from pip._internal.models.index import PyPI

        url = getattr(PyPI, "simple_url", None)
        return str(url) if url else None
    except Exception:  # noqa: BLE001 - pip absent or its internals changed
        return None


@functools.lru_cache(maxsize=1)
def default_index_hosts() -> FrozenSet[str]:
    """Host names of the default index and of the storage it serves files from."""
    try:
        from pip._internal.models.index import PyPI

        hosts = {getattr(PyPI, "netloc", ""), getattr(PyPI, "file_storage_domain", ""),
                 urlparse(str(getattr(PyPI, "simple_url", ""))).hostname or ""}
    except Exception:  # noqa: BLE001
        return frozenset()
    return frozenset(h.lower() for h in hosts if h)


def is_default_index(url: str) -> bool:
    try:
        host = (urlparse(url.strip()).hostname or "").lower()
    except ValueError:
        return False
    return bool(host) and host in default_index_hosts()
