"""kfdguard.record behaves like dataclasses on everything kfdguard uses (mypy checks it as dataclasses)."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any, ClassVar

import pytest

from kfdguard import record

MODULES = [pytest.param(dataclasses, id="dataclasses"), pytest.param(record, id="record")]


def classes(m: Any) -> tuple[Any, Any, Any]:
    @m.dataclass(frozen=True, slots=True)
    class Point:
        x: int
        y: int = 0
        tags: tuple[str, ...] = ()
        extra: list[int] = m.field(default_factory=list)

        @property
        def norm(self) -> int:
            return abs(self.x) + abs(self.y)

    @m.dataclass(frozen=True)
    class Labelled(Point):
        label: str = "p"

    @m.dataclass
    class Mutable:
        items: dict[str, int] = m.field(default_factory=dict)
        count: int = 0

        def __post_init__(self) -> None:
            self.count = len(self.items)

    return Point, Labelled, Mutable


@pytest.mark.parametrize("m", MODULES)
def test_construction_defaults_and_factories(m: Any) -> None:
    Point, Labelled, Mutable = classes(m)
    p = Point(1, tags=("a",))
    assert (p.x, p.y, p.tags, p.extra, p.norm) == (1, 0, ("a",), [], 1)
    assert Point(1).extra is not Point(1).extra  # a fresh list each time
    assert repr(p) == "test_construction_defaults_and_factories.<locals>.Point(x=1, y=0, tags=('a',), extra=[])" or (
        repr(p).endswith("Point(x=1, y=0, tags=('a',), extra=[])")
    )
    assert Labelled(2, 3, label="q").label == "q" and Labelled(2).y == 0
    assert Mutable({"a": 1}).count == 1  # __post_init__ ran
    assert Point.__match_args__ == ("x", "y", "tags", "extra")


@pytest.mark.parametrize("m", MODULES)
def test_errors_match(m: Any) -> None:
    Point, _, _ = classes(m)
    with pytest.raises(TypeError):
        Point()
    with pytest.raises(TypeError):
        Point(1, nope=2)
    with pytest.raises(TypeError):
        Point(1, 2, (), [], 5)
    with pytest.raises(TypeError):
        Point(1, x=1)
    with pytest.raises(m.FrozenInstanceError):
        Point(1).x = 2
    with pytest.raises(AttributeError):
        del Point(1).x
    with pytest.raises(TypeError):
        m.replace(Point(1), nope=2)


@pytest.mark.parametrize("m", MODULES)
def test_equality_hash_replace_asdict(m: Any) -> None:
    Point, Labelled, Mutable = classes(m)
    assert Point(1, 2) == Point(1, 2) and Point(1, 2) != Point(2, 1)
    assert Point(1, 2) != Labelled(1, 2)  # another class is never equal
    with pytest.raises(TypeError):
        hash(Point(1))  # frozen hashes its fields, and a list field is unhashable

    @m.dataclass(frozen=True)
    class Key:
        a: int
        b: tuple[str, ...] = ()

    key: Any = Key  # built by the module under test, which mypy sees as Any here
    assert hash(key(1, ("a",))) == hash(key(1, ("a",))) and {key(1), key(1)} == {key(1)}
    with pytest.raises(TypeError):
        hash(Mutable())  # eq without frozen: unhashable
    q = m.replace(Labelled(1, 2), y=5)
    assert (type(q), q.x, q.y, q.label) == (Labelled, 1, 5, "p")
    nested = Labelled(1, tags=("t",), extra=[3])
    assert m.asdict(nested) == {"x": 1, "y": 0, "tags": ("t",), "extra": [3], "label": "p"}
    assert m.asdict(Mutable({"k": 1})) == {"items": {"k": 1}, "count": 1}


@pytest.mark.parametrize("m", MODULES)
def test_slots_and_copy(m: Any) -> None:
    Point, _, _ = classes(m)
    p = Point(1, 2, extra=[4])
    assert not hasattr(p, "__dict__")
    clone = copy.deepcopy(p)  # goes through __reduce_ex__ and the slots' state, like pickle
    assert clone == p and clone.extra is not p.extra


def test_a_mutable_default_is_refused_as_by_dataclasses() -> None:
    with pytest.raises(ValueError, match="default_factory"):

        @record.dataclass
        class Bad:
            items: list[int] = []  # noqa: RUF012 - the mistake under test


@pytest.mark.parametrize("m", MODULES)
def test_class_variables_redefinitions_and_inherited_slots(m: Any) -> None:
    @m.dataclass(frozen=True, slots=True)
    class Base:
        kind: ClassVar[str] = "base"  # not a field
        a: int = 1
        b: int = 2

    @m.dataclass(frozen=True, slots=True)
    class Child(Base):
        a: int = 10  # redefined: it keeps its place before b
        c: int = 3

    made: Any = Child  # built by the module under test, which mypy sees as Any here
    child = made(4, 5, 6)
    assert made.__match_args__ == ("a", "b", "c") and (child.a, child.b, child.c) == (4, 5, 6)
    assert made().a == 10 and made.kind == "base" and not hasattr(child, "__dict__")
    assert made.__slots__ == ("c",)  # a and b are the base's slots
    with pytest.raises(TypeError, match="non-default argument"):

        @m.dataclass(frozen=True)
        class Wrong(Base):
            d: int
