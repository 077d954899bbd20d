"""The verdicts on the real stacks' shapes (tests/fixtures/realwheels: what envdoctor read from real installs of
torch + xformers, torch + bitsandbytes, jax[cuda12], tensorflow[and-cuda], each soname agreed with the real loader),
on fake machines, without the downloads. The referee is what the real process did: on a machine the stack fits, the
only errors are libraries the real import failed to open; on a GPU it does not fit, the cause is said once."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from envdoctor import doctor
from envdoctor.snapshot import Snapshot
from tests.rules.helpers import check
from tests.snapfactory import machine

SHAPES = sorted((Path(__file__).parent / "fixtures" / "realwheels").glob("*.json"))


def _snap(shape: dict, gpu: str, driver: str, driver_cuda: str) -> Snapshot:
    data = machine(driver=driver, driver_cuda=driver_cuda, gpus=[gpu]).to_dict()
    data["python"].update(shape["python"])
    data["binaries"] = shape["binaries"]
    return Snapshot.from_dict(data)


@pytest.mark.parametrize("path", SHAPES, ids=[p.stem for p in SHAPES])
def test_a_fitting_machine_gets_no_error_the_real_process_does_not_show(path):
    shape = json.loads(path.read_text())
    found = doctor.build_report(_snap(shape, shape["fits"], "595.71.05", "13.2")).findings
    failed = " ".join(v for v in shape["imports"].values() if v != "ok")
    errors = [f for f in found if f.severity == "error"]
    for f in errors:
        assert f.id == "ED650", (f.id, f.message)
        soname = f.message.split(" needs ", 1)[1].split(",")[0].split(" ")[0]
        assert f"{soname}: cannot open shared object file" in failed, (soname, shape["imports"])
    assert not [f for f in found if f.id in ("ED250", "ED251")], [(f.id, f.message[:120]) for f in found]


@pytest.mark.parametrize("path", [p for p in SHAPES if json.loads(p.read_text())["misfits"]],
                         ids=lambda p: p.stem)
def test_a_gpu_the_cuda_line_dropped_gets_the_cause_once(path):
    """torch's CUDA 13 build on a GTX 1080 (sm_61): ED200 says it, with the CUDA 13 nvidia-* libraries and
    torch's own binaries folded in as consequences; an extension with no sm_61 code of its own is its own cause."""
    shape = json.loads(path.read_text())
    found = check(_snap(shape, shape["misfits"], "580.126.09", "13.0"), ("ED200", "ED250", "ED251", "ED151"))
    ids = [f.id for f in found]
    assert ids.count("ED200") == 1, [(f.id, f.message[:100]) for f in found]
    [cause] = [f for f in found if f.id == "ED200"]
    assert any("CUDA 13 libraries" in c for c in cause.consequences)
    assert not [f for f in found if f.id == "ED250" and f.message.startswith(("the CUDA", "torch "))]
    assert "ED151" not in ids  # cuDNN of the CUDA 13 line: the same cause
    for f in found:
        if f.id == "ED250":  # what is left is an extension of its own (xformers, bitsandbytes): not torch's
            assert not f.message.startswith("torch"), f.message


def test_the_shapes_are_the_real_ones():
    names = {p.stem for p in SHAPES}
    assert {"torch-xformers", "jax-cuda12", "tensorflow-cuda"} <= names
    for p in SHAPES:
        shape = json.loads(p.read_text())
        assert shape["sonames_compared"] > 0 and shape["binaries"]["binaries"]
        assert all(len(b["sha256"]) == 64 for b in shape["binaries"]["binaries"])
