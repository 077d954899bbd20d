"""envdoctor's curated compatibility knowledge (``matrices/*.toml``) as typed, queryable tables.

    from envdoctor.knowledge import load_matrices
    m = load_matrices()
    m.driver_runs_cuda("525.60.13", "12.1")     # True (minor-version compatibility)
    m.torch_variant("2.5.1", "cu121").arch_list  # ["sm_50", ..., "sm_90"]

See docs/matrices.md for the table schemas and the meaning of ``source`` / ``verified``.
"""

from __future__ import annotations

from .load import SCHEMA_VERSION, SPECS, TABLES, bundled_dir, cache_file, default_cache_dir, read_table_file, validate_row
from .matrices import Matrices, gpu_name_tokens, load_matrices
from .tables import (
    ArchInfo,
    CondaChannel,
    CudaRelease,
    CudnnRelease,
    GpuInfo,
    Incompatibility,
    JaxPlugin,
    JaxRelease,
    MvcRange,
    TfPatch,
    TfRelease,
    TorchPatch,
    TorchRelease,
    TorchVariant,
    build_runs_on_cc,
    normalize_cc,
    normalize_os,
    parse_version,
    series,
)

__all__ = [
    "ArchInfo",
    "CondaChannel",
    "CudaRelease",
    "CudnnRelease",
    "GpuInfo",
    "Incompatibility",
    "JaxPlugin",
    "JaxRelease",
    "Matrices",
    "MvcRange",
    "SCHEMA_VERSION",
    "SPECS",
    "TABLES",
    "TfPatch",
    "TfRelease",
    "TorchPatch",
    "TorchRelease",
    "TorchVariant",
    "build_runs_on_cc",
    "bundled_dir",
    "cache_file",
    "default_cache_dir",
    "gpu_name_tokens",
    "load_matrices",
    "normalize_cc",
    "normalize_os",
    "parse_version",
    "read_table_file",
    "series",
    "validate_row",
]
