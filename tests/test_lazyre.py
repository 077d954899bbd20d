"""envdoctor.lazyre: a module-level pattern compiles on first use and then acts as re.compile's."""
from __future__ import annotations

import re

from envdoctor.lazyre import lazy_re


def test_compiles_on_first_use_and_matches_like_re():
    lazy = lazy_re(r"^(\d+)\.(\d+)$", re.ASCII)
    assert "_compiled" not in vars(lazy)  # nothing compiled yet
    real = re.compile(r"^(\d+)\.(\d+)$", re.ASCII)
    for text in ("12.4", "x", "١٢.٣", "8.6\n"):
        a, b = lazy.match(text), real.match(text)
        assert (a and a.groups()) == (b and b.groups())
    assert vars(lazy)["_compiled"] is real  # re's own cache: the very same pattern object
    assert lazy.sub(r"\2.\1", "1.2") == "2.1" and lazy.pattern == real.pattern and lazy.groups == 2
    assert lazy.findall("3.4") == [("3", "4")] and [m.group(0) for m in lazy.finditer("5.6")] == ["5.6"]


def test_a_bad_pattern_fails_where_it_is_used():
    bad = lazy_re(r"(unclosed")
    try:
        bad.search("x")
    except re.error:
        pass
    else:
        raise AssertionError("a bad pattern must raise re.error on use")
