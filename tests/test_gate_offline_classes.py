"""Classes of real requirement files the offline planner judges from its data (each seen in the held-out corpus,
tests/fixtures/gate_corpus): torch brought in by a package that requires it, an older jax range judged by jaxlib's
wheels, and a framework release that another line decides, which is not judged rather than guessed."""
from __future__ import annotations

import json

from tests.test_gate_untrusted import _gate, repo  # noqa: F401 - repo: the shared checkout fixture

PASCAL = ["--driver", "470.82.01", "--gpu", "sm_61", "--python-version", "3.10", "--offline", "--format", "json"]
H100_313 = ["--driver", "570.124.06", "--gpu", "sm_90", "--python-version", "3.13", "--offline", "--format", "json"]


def _unit(repo, text, args):
    (repo / "requirements.txt").write_text(text)
    p = _gate(repo, "requirements.txt", *args)
    assert p.returncode in (0, 1), p.stderr
    return p.returncode, json.loads(p.stdout)["inputs"][0]


def test_a_package_that_requires_torch_brings_the_newest_torch(repo):
    """alpaca-lora's requirements name accelerate and peft, never torch: pip installs the newest torch (CUDA 13 on
    the index), which a 470 driver and a Pascal GPU cannot run."""
    code, unit = _unit(repo, "scipy\naccelerate\ntransformers>=4.28.0\n", PASCAL)
    torch = [p for p in unit["packages"] if p["name"] == "torch"]
    assert code == 1 and len(torch) == 1, unit["packages"]
    ids = {f["id"] for f in unit["findings"] if f["severity"] == "error"}
    assert ids == {"ED100", "ED200"}, unit["findings"]
    # located at the line that brings torch in
    assert {(loc["file"], loc["line"]) for f in unit["findings"] if f["severity"] == "error"
            for loc in f["locations"]} == {("requirements.txt", 2)}, unit["findings"]


def test_a_release_that_does_not_require_torch_brings_none(repo):
    """bitsandbytes declares torch from 0.43.0 on (0.41.1 declares none): no torch is planned for the older pin."""
    code, unit = _unit(repo, "bitsandbytes==0.41.1\n", PASCAL)
    assert code == 0 and not [p for p in unit["packages"] if p["name"] == "torch"], unit["packages"]
    code, unit = _unit(repo, "bitsandbytes>=0.43\n", PASCAL)
    assert code == 1 and [p for p in unit["packages"] if p["name"] == "torch"], unit["packages"]


def test_an_explicit_torch_line_is_not_replaced(repo):
    code, unit = _unit(repo, "accelerate\ntorch==2.0.1\n", PASCAL)
    assert [p["version"] for p in unit["packages"] if p["name"] == "torch"] == ["2.0.1"], unit["packages"]
    assert code == 0, unit["findings"]  # torch 2.0.1 (CUDA 11.7) runs on 470 and sm_61


def test_an_older_jax_range_is_judged_by_the_jaxlib_wheels(repo):
    """JaxMARL pins jax / jaxlib >=0.4.16,<=0.4.25: older than the data, and jaxlib 0.4.25 has no cp313 wheel."""
    code, unit = _unit(repo, "jax>=0.4.16.0,<=0.4.25\njaxlib>=0.4.16.0,<=0.4.25\n", H100_313)
    assert code == 1 and [f["id"] for f in unit["findings"] if f["severity"] == "error"] == ["ED803"], unit["findings"]
    f = next(f for f in unit["findings"] if f["id"] == "ED803")
    assert "jaxlib" in f["message"] and "Python 3.13" in f["message"], f["message"]
    code, unit = _unit(repo, "jax>=0.4.16.0,<=0.4.25\njaxlib>=0.4.16.0,<=0.4.25\n",
                       [a if a != "3.13" else "3.12" for a in H100_313])
    assert code == 0, unit["findings"]  # cp312 wheels exist: nothing claimed


def test_a_framework_release_another_line_decides_is_not_judged(repo):
    """maxtext: tensorflow>=2.13 beside tensorflow-text>=2.13 (each tensorflow-text pins its tensorflow minor): the
    resolver installed tensorflow 2.14 there (CUDA 11.8, which a 470 driver runs), not the newest the data knows,
    so judging the newest would be a false ED100."""
    code, unit = _unit(repo, "tensorflow-text>=2.13.0\ntensorflow>=2.13.0\n", PASCAL)
    assert code == 0 and not [f for f in unit["findings"] if f["severity"] == "error"], unit["findings"]
    why = {x["location"].rsplit(":", 1)[1]: x["why"] for x in unit["not_judged"]}
    assert set(why) == {"1", "2"} and "tensorflow-text>=2.13.0" in why["2"], why
    # pinned exactly, the release is the file's own: judged
    code, unit = _unit(repo, "tensorflow-text==2.21.0\ntensorflow==2.21.0\n", PASCAL)
    assert code == 1 and "ED100" in {f["id"] for f in unit["findings"] if f["severity"] == "error"}, unit["findings"]
