import json
from pathlib import Path

import jsonschema
import pytest

from envdoctor.probes import ProbeContext, run_probes
from envdoctor.schema import snapshot_json_schema
from envdoctor.snapshot import GPU, Driver, Framework, Snapshot

DOCS = Path(__file__).resolve().parent.parent / "docs"


def test_schema_file_matches_model():
    committed = json.loads((DOCS / "snapshot.schema.json").read_text())
    assert committed == snapshot_json_schema(), "regenerate: python -m envdoctor.schema > docs/snapshot.schema.json"


def test_round_trip_exact():
    s = Snapshot(envdoctor_version="x", created="2026-01-01T00:00:00+00:00")
    s.driver = Driver(state="ok", version="550.54.15", cuda_version="12.4", source="nvml")
    s.gpus = [GPU(index=0, name="NVIDIA A100-SXM4-80GB", compute_capability="8.0", memory_total_mib=81920)]
    s.python.frameworks = [Framework("torch", "torch", "2.3.1+cu121", build="cuda", cuda_version="12.1",
                                     arch_list=["sm_80", "sm_90"], requires=["nvidia-cudnn-cu12==8.9.2.26"])]
    s.python.packages = {"torch": "2.3.1+cu121"}
    text = s.to_json()
    back = Snapshot.from_json(text)
    assert back == s
    assert back.to_json() == text


def test_live_probe_validates_against_schema():
    snap = run_probes(ProbeContext())
    jsonschema.validate(snap.to_dict(), snapshot_json_schema())
    assert Snapshot.from_dict(snap.to_dict()) == snap
    assert {p.name for p in snap.probes} >= {"platform", "nvidia", "toolkits", "python", "cudnn", "loader", "rocm"}


@pytest.mark.parametrize("bad, msg", [
    ({"schema_version": "9.0"}, "schema_version"),
    ({"schema_version": "1.0", "gpus": "x"}, "expected a list"),
    ({"schema_version": "1.0", "driver": {"state": 3}}, "expected str"),
    ({"schema_version": "1.0", "gpus": [{"index": True}]}, "expected int"),
    ([], "JSON object"),
])
def test_from_dict_rejects_wrong_shapes(bad, msg):
    with pytest.raises(ValueError, match=msg):
        Snapshot.from_dict(bad)


def test_failing_probe_is_recorded_and_others_survive():
    def boom(ctx, snap):
        raise RuntimeError("kaboom")

    def fine(ctx, snap):
        snap.driver.version = "1.2"

    snap = run_probes(ProbeContext(), stages=[[("boom", boom), ("fine", fine)]])
    st = {p.name: p for p in snap.probes}
    assert st["boom"].status == "error" and "kaboom" in st["boom"].reason
    assert st["fine"].status == "ok"
    assert snap.driver.version == "1.2"


def test_a_stage_runs_its_waiting_probes_in_threads_beside_the_others():
    """A probe marked WAITS (it waits on the driver, a GPU tool, another interpreter) gets a thread, started first;
    the others run one after another in the calling thread meanwhile; statuses come in the stage's order."""
    import threading

    from envdoctor.errors import BadInput
    from envdoctor.probes import WAITS

    released = threading.Event()
    seen = {}

    def waits(ctx, snap):  # done only once the probe listed after it ran: they overlap
        seen["waits"] = (threading.current_thread() is threading.main_thread(), released.wait(10))

    def first(ctx, snap):
        seen["first"] = threading.current_thread() is threading.main_thread()

    def releases(ctx, snap):
        seen["releases"] = threading.current_thread() is threading.main_thread()
        released.set()

    snap = run_probes(ProbeContext(), stages=[[("first", first), ("waits", waits, WAITS), ("releases", releases)]])
    assert [p.name for p in snap.probes] == ["first", "waits", "releases"] and {p.status for p in snap.probes} == {"ok"}
    assert seen == {"first": True, "waits": (False, True), "releases": True}

    def refuses(ctx, snap):
        raise BadInput("--python x: not a Python interpreter")

    ran = []
    with pytest.raises(BadInput, match="not a Python interpreter"):  # raised once the stage has ended
        run_probes(ProbeContext(), stages=[[("refuses", refuses, WAITS), ("after", lambda c, s: ran.append(1))]])
    assert ran == [1]


def test_report_schema_file_matches_and_validates_check_output():
    import subprocess
    import sys

    from envdoctor.schema import report_json_schema

    committed = json.loads((DOCS / "report.schema.json").read_text())
    assert committed == report_json_schema(), "regenerate: python -m envdoctor.schema report > docs/report.schema.json"
    proc = subprocess.run([sys.executable, "-m", "envdoctor", "check", "--format", "json"], capture_output=True, text=True)
    assert proc.returncode in (0, 1), proc.stderr
    jsonschema.validate(json.loads(proc.stdout), committed)


def test_model_hints_read_without_compiling_agree_with_typing():
    """from_dict reads the model's annotations with a small reader of its own (typing.get_type_hints
    compiled each string); for every model class it must give exactly what typing gives, and a class whose
    annotations it cannot read goes to typing."""
    import dataclasses
    import typing

    from envdoctor import snapshot as S

    classes = [c for c in vars(S).values()
               if isinstance(c, type) and dataclasses.is_dataclass(c) and c.__module__ == S.__name__]
    assert len(classes) > 20
    for cls in classes:
        assert S._simple_hints(cls) == typing.get_type_hints(cls), cls.__name__
    assert S._evaluate("Optional[Dict[str, List[Evidence]]]", {}) == typing.Optional[
        typing.Dict[str, typing.List[S.Evidence]]]
    for text in ("int | None", "Tuple[str, int]", "Unknown", "List[str", "Optional[]", "Callable[[int], str]"):
        assert S._evaluate(text, {}) is None, text
    assert S._evaluate("str", {"str": 1}) is None  # a class attribute shadowing a builtin: typing decides


def test_a_filled_snapshot_round_trips_through_json():
    """A snapfactory machine with GPUs, frameworks and loader parts is read back field for field by from_dict."""
    from tests import snapfactory

    snap = snapfactory.machine(driver="550.54.15", driver_cuda="12.4", gpus=["NVIDIA A100-SXM4-80GB:8.0"],
                               frameworks=[snapfactory.torch("2.5.1", cuda="12.4", cudnn="9.1.0")],
                               ld_library_path=["/usr/local/cuda/lib64"], gpu_env={"CUDA_VISIBLE_DEVICES": "0"})
    assert Snapshot.from_dict(json.loads(json.dumps(snap.to_dict()))) == snap
