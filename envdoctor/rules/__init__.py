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
    "binaries",
    "kernels",
    "memory",
    "buildenv",
    "installers",
    "accelerators",
    "hostfacts",
    "gpu_support",
    "known_broken",
    "system_runtime",
    "libcuda",
    "ptxas",
    "runtimes",
    "framework_fit",
    "cuda_mix",
)

for _name in RULE_MODULES:
    importlib.import_module(f"envdoctor.rules.{_name}")

# Rules that only speak about what a machine probe cannot show: ED700-ED749 judge smoke results
# (their findings come from a smoke run), ED800-ED849 judge gate's install plans. A plain `check` does
# not import them; the catalogue (`envdoctor rules`, `explain`), gate and smoke do.
EXTRA_RULE_MODULES = ("envdoctor.rules.smoke_rules", "envdoctor.rules.gate_rules")


def load_extra_rules() -> None:
    for name in EXTRA_RULE_MODULES:
        importlib.import_module(name)
