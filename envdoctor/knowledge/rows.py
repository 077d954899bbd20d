"""The bundled tables by name and their typed rows, as `envdoctor matrices list | show` and the coverage table of
docs/matrices.md (envdoctor.knowledge.coverage) read them."""
from __future__ import annotations

import dataclasses
from typing import Any, Dict, List

from envdoctor.errors import BadInput

TABLE_NAMES = ("cuda_driver", "gpus", "pytorch", "tensorflow", "jax", "cudnn", "incompatibilities", "gpu_support",
               "amd_gpus")
_NESTED = ("patch_rows", "variants", "plugins")


def table_rows(m: Any, table: str) -> Dict[str, List[Any]]:
    """The typed rows of one table, by kind (``[[release]]``, ``[[variant]]`` ...)."""
    if table == "cuda_driver":
        return {"release": list(m.cuda_releases), "mvc": [m.mvc[k] for k in sorted(m.mvc)]}
    if table == "gpus":
        return {"arch": list(m.archs.values()), "gpu": list(m.gpus)}
    if table == "pytorch":
        return {"release": list(m.pytorch_releases),
                "patch": [p for r in m.pytorch_releases for p in r.patch_rows],
                "variant": [v for r in m.pytorch_releases for v in r.variants],
                "conda": list(m.conda)}
    if table == "tensorflow":
        return {"release": list(m.tensorflow_releases),
                "patch": [p for r in m.tensorflow_releases for p in r.patch_rows]}
    if table == "jax":
        return {"release": list(m.jax_releases), "plugin": [p for r in m.jax_releases for p in r.plugins.values()],
                "jaxlib": list(m.jaxlib_series)}
    if table == "cudnn":
        return {"release": list(m.cudnn_releases)}
    if table == "gpu_support":
        return {"branch": list(m.driver_branches)}
    if table == "amd_gpus":
        return {"target": list(m.amd_targets), "gpu": list(m.amd_gpus)}
    if table == "incompatibilities":
        return {"fact": list(m.incompatibilities), "deprecated_distribution": list(m.deprecated_distributions)}
    raise BadInput(f"unknown table {table!r}; tables: {', '.join(TABLE_NAMES)}")


def row_dict(kind: str, row: Any) -> Dict[str, Any]:
    data: Dict[str, Any] = {"kind": kind}
    for f in dataclasses.fields(row):
        if f.name in _NESTED:
            continue
        value = getattr(row, f.name)
        if value is None or (isinstance(value, (list, dict)) and not value):
            continue
        data[f.name] = value
    data["unverified"] = bool(getattr(row, "unverified", False))
    return data
