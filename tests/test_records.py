"""envdoctor.records.dataclass behaves as dataclasses.dataclass for what the model uses.

Each check builds the same class twice, once with each decorator, and compares what they do.
"""
from __future__ import annotations

import dataclasses
import copy as copy_module
from typing import Dict, List, Optional

import pytest

from envdoctor import records


def _pair(frozen: bool):
    made = []
    for deco in (dataclasses.dataclass(frozen=frozen), records.dataclass(frozen=frozen)):
        @deco
        class Row:
            name: str
            cc: str = "8.6"
            aliases: List[str] = dataclasses.field(default_factory=list)
            note: Optional[str] = None
            pins: Dict[str, str] = dataclasses.field(default_factory=dict, compare=False, repr=False)

            @property
            def shout(self) -> str:
                return self.name.upper()

        made.append(Row)
    return made


@pytest.mark.parametrize("frozen", [False, True])
def test_same_behaviour_as_the_standard_decorator(frozen):
    std, light = _pair(frozen)
    for args, kw in (((), {"name": "A100"}), (("A100", "8.0"), {"note": "x"}), ((), {"name": "T4", "aliases": ["t4"]})):
        a, b = std(*args, **kw), light(*args, **kw)
        assert repr(a) == repr(b)
        assert dataclasses.asdict(a) == dataclasses.asdict(b)
        assert [f.name for f in dataclasses.fields(a)] == [f.name for f in dataclasses.fields(b)]
        assert b.shout == a.shout
        assert b == light(*args, **kw) and b != light(name="other")
        assert (b == a) is False  # another class: NotImplemented both ways, as with two dataclasses
    # pins is compare=False: equal even when it differs
    assert light(name="x", pins={"a": "1"}) == light(name="x")
    # a fresh list per instance from default_factory
    one, two = light(name="a"), light(name="b")
    one.aliases.append("z") if not frozen else None
    assert two.aliases == []
    assert dataclasses.is_dataclass(light) and dataclasses.is_dataclass(light(name="a"))
    assert light.__match_args__ == std.__match_args__
    assert light.cc == "8.6" and "aliases" not in light.__dict__  # class attributes as dataclasses leaves them


@pytest.mark.parametrize("frozen", [False, True])
def test_same_errors(frozen):
    std, light = _pair(frozen)
    for call in (lambda c: c(), lambda c: c("a", "b", [], None, {}, "extra"), lambda c: c(nam="a"),
                 lambda c: c("a", name="b")):
        with pytest.raises(TypeError):
            call(std)
        with pytest.raises(TypeError):
            call(light)


def test_frozen_rows_are_immutable_hashable_and_replaceable():
    _, light = _pair(True)
    row = light(name="T4", cc="7.5")
    with pytest.raises(dataclasses.FrozenInstanceError):
        row.name = "x"
    with pytest.raises(dataclasses.FrozenInstanceError):
        del row.cc
    with pytest.raises(TypeError):  # aliases is a list: unhashable, as a frozen dataclass with a list field
        hash(row)
    copy = dataclasses.replace(row, cc="8.0")
    assert (copy.name, copy.cc, row.cc) == ("T4", "8.0", "7.5")

    @records.dataclass(frozen=True)
    class Key:
        a: str
        b: int = 0

    assert hash(Key("x", 1)) == hash(Key("x", 1)) and len({Key("x", 1), Key("x", 1), Key("y")}) == 2
    assert copy_module.deepcopy(Key("x", 2)) == Key("x", 2)


def test_mutable_rows_are_unhashable_and_settable():
    _, light = _pair(False)
    row = light(name="a")
    row.cc = "9.0"
    assert row.cc == "9.0"
    with pytest.raises(TypeError):
        hash(row)


def test_inheritance_post_init_and_own_methods():
    @records.dataclass
    class Base:
        a: int
        b: int = 2

        def __repr__(self) -> str:  # a method the class defines itself wins
            return "mine"

    @dataclasses.dataclass
    class Std(Base):  # a standard dataclass may subclass one
        c: int = 3

    @records.dataclass
    class Light(Base):
        c: int = 4

        def __post_init__(self) -> None:
            self.total = self.a + self.b + self.c

    assert [f.name for f in dataclasses.fields(Std)] == ["a", "b", "c"]
    assert Std(1).c == 3 and Light(1).total == 7 and repr(Base(1)) == "mine" and repr(Light(1)).endswith("Light(a=1, b=2, c=4)")
    assert Light(1, 1, 1) == Light(a=1, b=1, c=1)


def test_what_it_refuses():
    with pytest.raises(ValueError):
        @records.dataclass
        class Bad:
            xs: list = []  # noqa: RUF012

    with pytest.raises(TypeError):
        @records.dataclass
        class Order:
            a: int = 1
            b: int

    with pytest.raises(TypeError):
        @records.dataclass
        class NoInit:
            a: int = dataclasses.field(default=1, init=False)


def test_own_field_fields_and_replace_agree_with_the_standard_ones():
    """records.field / fields / replace (what the model imports instead of dataclasses') against the standard
    helpers, on a record class and on a standard one; the standard ones read a record class too."""
    @records.dataclass(frozen=True)
    class Light:
        name: str
        cc: str = "8.6"
        aliases: List[str] = records.field(default_factory=list, compare=False)

    @dataclasses.dataclass(frozen=True)
    class Std:
        name: str
        cc: str = "8.6"
        aliases: List[str] = dataclasses.field(default_factory=list, compare=False)

    for cls in (Light, Std):
        row = cls("A100", aliases=["a"])
        assert [f.name for f in records.fields(row)] == [f.name for f in dataclasses.fields(row)] == \
            ["name", "cc", "aliases"]
        assert records.replace(row, cc="8.0") == dataclasses.replace(row, cc="8.0") == cls("A100", "8.0", ["a"])
        assert records.replace(row, cc="8.0").aliases == ["a"]
        by_name = {f.name: f for f in dataclasses.fields(cls)}
        assert by_name["name"].default is dataclasses.MISSING and by_name["cc"].default == "8.6"
        assert by_name["aliases"].default_factory is list and by_name["aliases"].compare is False
        assert [records.has_default(f) for f in records.fields(cls)] == [False, True, True]
        assert [records.default_of(f) for f in records.fields(cls)] == [records.NO_DEFAULT, "8.6", []]
    assert dataclasses.asdict(Light("x")) == dataclasses.asdict(Std("x")) == {"name": "x", "cc": "8.6", "aliases": []}
    with pytest.raises(TypeError):
        records.fields(object())
    with pytest.raises(ValueError):
        records.field(default=1, default_factory=list)


JUDGE = """
import json, sys
import envdoctor.doctor as doctor
from envdoctor.snapshot_io import load_snapshot
live = doctor.obtain_snapshot(None, None, None, 5.0)  # every probe of this machine, as check runs them
assert live.probes
snap = load_snapshot(sys.argv[1])
prepared = doctor.prepare_judgement()
report = doctor.build_report(snap, prepared=prepared)
doc = doctor.findings_document(report, snap, prepared[0], strict=False, redact=True)
for fmt in ("json", "text", "markdown", "sarif", "junit", "github", "prometheus"):
    assert doctor.render_findings(doc, fmt)
print(json.dumps(sorted(m for m in ("dataclasses", "inspect") if m in sys.modules)))
"""


def test_probing_judging_and_rendering_never_import_dataclasses(tmp_path):
    """Importing the dataclasses module imports inspect (ast, dis, tokenize): ~9 ms of every start.
    Probing this machine, loading a snapshot, judging it and rendering every format needs neither."""
    import json
    import subprocess
    import sys

    from .snapfactory import machine, torch

    snap = machine(driver="550.54.15", driver_cuda="12.4", gpus=["NVIDIA A100-SXM4-80GB:8.0"],
                   frameworks=[torch("2.5.1", cuda="12.4")])
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(snap.to_dict()))
    proc = subprocess.run([sys.executable, "-c", JUDGE, str(path)], capture_output=True, text=True, cwd=str(tmp_path),
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == []


def test_own_asdict_agrees_with_the_standard_one():
    """records.asdict (what the binaries scan cache writes with) gives dataclasses.asdict's dict for nested
    records, lists, tuples and dicts of plain values, and hands anything else to the standard one."""
    from envdoctor.binaries.scan import FileScan

    @records.dataclass
    class Inner:
        name: str
        tags: List[str] = records.field(default_factory=list)

    @records.dataclass
    class Outer:
        inner: Inner
        pairs: Dict[str, Optional[int]] = records.field(default_factory=dict)
        seq: tuple = ()
        other: object = None

    row = Outer(Inner("a", ["x"]), {"k": 1, "n": None}, (Inner("b"), 2.5, True))
    assert records.asdict(row) == dataclasses.asdict(row)
    assert type(records.asdict(row)["seq"]) is tuple
    odd = Outer(Inner("c"), other={1, 2})  # a set: the standard one deep-copies it
    assert records.asdict(odd) == dataclasses.asdict(odd) and records.asdict(odd)["other"] is not odd.other
    scan = FileScan(cuda=True, machine="x86_64", elfclass=64, sass=["sm_80", "sm_90"], ptx=["compute_90"],
                    ptx_isa={"compute_90": "8.4"}, entries=3, needed=["libcudart.so.12"], soname="libx.so")
    assert records.asdict(scan) == dataclasses.asdict(scan)
    assert FileScan.from_dict(records.asdict(scan)) == scan
    with pytest.raises(TypeError):
        records.asdict(Inner)
