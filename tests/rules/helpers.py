"""What rule tests share: run selected rules on a snapshot with the bundled data, and pick findings."""
from __future__ import annotations

import functools

from envdoctor.knowledge import load_matrices
from envdoctor.context import Context
from envdoctor.rules.engine import run_rules, select_rules


@functools.lru_cache(maxsize=1)
def matrices():
    return load_matrices()


def check(snap, only):
    return run_rules(Context(snap, matrices()), select_rules(only=list(only)))


def by_id(findings, rid):
    return [f for f in findings if f.id == rid]


def serious(findings):
    return [f for f in findings if f.severity in ("error", "warning")]
