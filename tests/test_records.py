"""envdoctor.records.dataclass behaves as dataclasses.dataclass for what the model uses (issue 18).

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
