"""The doctor's rule catalogue. Importing this package registers every rule module."""
from __future__ import annotations

import importlib

from envdoctor.rules.base import REGISTRY, Finding, Rule, rule  # noqa: F401

RULE_MODULES = (
    "summary",
    "cudnn_pins",
    "builds",
    "versions",
    "machine",
    "environment",
    "cuda_driver",
    "arch",
    "python_data",
    "gate_rules",
)

for _name in RULE_MODULES:
    importlib.import_module(f"envdoctor.rules.{_name}")

# The smoke rules (ED700-ED749) live with `envdoctor smoke`; they only speak when smoke results are folded in.
importlib.import_module("envdoctor.smoke.findings")
