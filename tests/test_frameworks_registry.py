"""envdoctor.frameworks: one registry of framework specs, each listing the matrices' builds newest first."""
from __future__ import annotations

import pytest
from packaging.version import Version

from envdoctor.frameworks import registry
from envdoctor.frameworks.table_spec import TableSpec
from envdoctor.frameworks.base import Target
from envdoctor.knowledge import load_matrices
from envdoctor.lock.resolve import FRAMEWORKS

M = load_matrices()


def test_the_registry_is_lock_s_list_of_frameworks() -> None:
    assert FRAMEWORKS == registry.names(lockable=True) == ("torch", "tensorflow", "jax", "onnxruntime", "paddlepaddle")
    assert registry.names() == ("torch", "tensorflow", "jax", "cupy", "onnxruntime", "paddlepaddle")
    with pytest.raises(KeyError):
        registry.get("paddle")


@pytest.mark.parametrize("dist, owner, kind", [
    ("tensorflow-cpu", "tensorflow", "cpu"), ("Tensorflow_GPU", "tensorflow", "gpu"), ("torchvision", "torch", "companion"),
    ("jax-cuda12-plugin", "jax", "plugin"), ("cupy-cuda12x", "cupy", "gpu"), ("numpy", None, None),
])
def test_each_distribution_has_one_owner(dist: str, owner: str, kind: str) -> None:
    spec = registry.spec_of_distribution(dist)
    assert (spec.name if spec else None) == owner
    assert (spec.classify(dist) if spec else None) == kind


@pytest.mark.parametrize("name", registry.names(lockable=True))
@pytest.mark.parametrize("cpu", [False, True])
def test_candidates_are_the_data_s_builds_newest_first(name: str, cpu: bool) -> None:
    spec = registry.get(name)
    cands = spec.candidates(M, Target(frameworks=[], cpu=cpu, companions=[]))
    if cpu and isinstance(spec, TableSpec):  # the vendors' build tables list GPU wheels only: no CPU build offered
        assert cands == []
        return
    assert cands and all(c.framework == name and c.kind == ("cpu" if cpu else "cuda") for c in cands)
    versions = [Version(c.version) for c in cands]
    assert versions == sorted(versions, reverse=True)
    assert {c.version for c in cands} <= set(spec.known_versions(M))
    assert all(c.source for c in cands)  # every build is a row of the data, with its source


def test_cupy_has_no_builds_in_the_data() -> None:
    """No matrices table lists CuPy releases: the spec offers none rather than invent them."""
    assert registry.get("cupy").candidates(M, Target(frameworks=[], companions=[])) == []
    assert not registry.get("cupy").lockable
