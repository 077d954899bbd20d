"""``@dataclass`` without compiling code per class, and without the ``dataclasses`` module: start-up costs of
``check``.

The standard decorator writes the source of ``__init__``, ``__repr__``, ``__eq__`` (``__hash__``,
``__setattr__``, ``__delattr__`` when frozen) for every class and ``exec``s it, and asks
``inspect.signature`` for a docstring when the class has none: about 0.7 ms a class, ~40 ms for the
snapshot model and the matrix rows at every start; and importing ``dataclasses`` imports ``inspect`` (and
``ast``, ``dis``, ``tokenize``): ~9 ms more.  :func:`dataclass` here makes the same kind of class from
shared, generic methods (closures, nothing compiled), with :func:`field`, :func:`fields` and
:func:`replace` of its own, and keeps what the standard library reads: ``__dataclass_fields__`` holds
:class:`Field` objects that answer as :class:`dataclasses.Field` does (``default`` and
``default_factory`` are ``dataclasses.MISSING`` when unset, read only by code that imported
``dataclasses`` already), so :func:`dataclasses.fields`, :func:`dataclasses.replace`,
:func:`dataclasses.asdict` and :func:`dataclasses.is_dataclass` work, and a standard dataclass may
subclass one.  A class may also use the standard ``dataclasses.field(...)``.

Supported: ``frozen``; fields with a default or ``field(default=..., default_factory=...,
repr=..., compare=..., hash=..., metadata=...)``; ``__post_init__``; methods the class defines itself win, as
with the standard decorator.  Not supported (TypeError): ``ClassVar`` / ``InitVar`` annotations,
``init=False`` fields.  Differences: a class without a docstring keeps ``__doc__`` None (the
standard one writes its signature there), and ``__repr__`` has no guard against cycles.
"""
from __future__ import annotations

import sys
from types import MappingProxyType, SimpleNamespace
from typing import TYPE_CHECKING, Any, Callable, Dict, Optional, Tuple, TypeVar, Union, overload

__all__ = ["asdict", "dataclass", "light_dataclass", "field", "fields", "replace", "Field", "NO_DEFAULT", "default_of",
           "has_default"]

C = TypeVar("C", bound=type)
_REQUIRED = object()  # a required field's place in __init__'s template


@overload
def light_dataclass(cls: C, *, frozen: bool = False) -> C: ...


@overload
def light_dataclass(cls: None = None, *, frozen: bool = False) -> Callable[[C], C]: ...


def light_dataclass(cls: Optional[C] = None, *, frozen: bool = False) -> Union[C, Callable[[C], C]]:
    """``@dataclass`` / ``@dataclass(frozen=True)``: see the module's docstring (exported as ``dataclass``;
    type checkers see the standard decorator, whose behaviour this one has)."""
    if cls is None:
        return lambda c: _process(c, frozen)
    return _process(cls, frozen)


class _NoDefault:
    def __repr__(self) -> str:
        return "NO_DEFAULT"


NO_DEFAULT: Any = _NoDefault()  # this module's "unset" (dataclasses.MISSING to the standard library)
_EMPTY: Any = MappingProxyType({})


def _std_missing() -> Any:
    import dataclasses  # only ever reached from code that has imported it (the standard library's readers)

    return dataclasses.MISSING


class Field:
    """One field of a record class, readable as a :class:`dataclasses.Field` (see the module's docstring)."""

    __slots__ = ("name", "type", "_default", "_factory", "repr", "hash", "compare", "metadata", "init", "kw_only")

    def __init__(self, default: Any = NO_DEFAULT, default_factory: Any = NO_DEFAULT, repr: bool = True,
                 hash: Optional[bool] = None, compare: bool = True, metadata: Any = None, init: bool = True) -> None:
        if default is not NO_DEFAULT and default_factory is not NO_DEFAULT:
            raise ValueError("cannot specify both default and default_factory")
        self.name: str = ""
        self.type: Any = None
        self._default, self._factory = default, default_factory
        self.repr, self.hash, self.compare, self.init, self.kw_only = repr, hash, compare, init, False
        self.metadata = _EMPTY if not metadata else MappingProxyType(metadata)

    @property
    def default(self) -> Any:
        return _std_missing() if self._default is NO_DEFAULT else self._default

    @property
    def default_factory(self) -> Any:
        return _std_missing() if self._factory is NO_DEFAULT else self._factory

    @property
    def _field_type(self) -> Any:  # the marker dataclasses.fields() selects on
        import dataclasses

        return dataclasses._FIELD  # type: ignore[attr-defined]  # a private marker typeshed does not list

    def __repr__(self) -> str:
        return (f"Field(name={self.name!r},type={self.type!r},default={self._default!r},"
                f"default_factory={self._factory!r},repr={self.repr!r},hash={self.hash!r},compare={self.compare!r})")


def _light_field(*, default: Any = NO_DEFAULT, default_factory: Any = NO_DEFAULT, repr: bool = True,
                 hash: Optional[bool] = None, compare: bool = True, metadata: Any = None, init: bool = True) -> Any:
    """``dataclasses.field`` for record classes (``init=False`` is refused when the class is made)."""
    return Field(default, default_factory, repr, hash, compare, metadata, init)


def _from_std(f: Any) -> Field:
    """A standard ``dataclasses.field(...)`` given to a record class, as this module's Field."""
    import dataclasses

    def own(v: Any) -> Any:
        return NO_DEFAULT if v is dataclasses.MISSING else v

    return Field(own(f.default), own(f.default_factory), f.repr, f.hash, f.compare, dict(f.metadata), f.init)


def _is_std_field(value: Any) -> bool:
    std = sys.modules.get("dataclasses")
    return std is not None and isinstance(value, std.Field)


def has_default(f: Any) -> bool:
    """Whether a field (this module's or the standard one) has a default or a default factory."""
    own = f if isinstance(f, Field) else _from_std(f)
    return own._default is not NO_DEFAULT or own._factory is not NO_DEFAULT


def default_of(f: Any) -> Any:
    """A field's default value (a fresh one from its factory), or NO_DEFAULT."""
    own = f if isinstance(f, Field) else _from_std(f)
    return own._factory() if own._factory is not NO_DEFAULT else own._default


def _light_fields(obj: Any) -> Tuple[Any, ...]:
    """``dataclasses.fields`` for record classes and their instances (a standard dataclass: the standard one)."""
    found = getattr(obj, "__dataclass_fields__", None)
    if found is None:
        raise TypeError("must be called with a dataclass type or instance")
    values = tuple(found.values())
    if all(type(f) is Field for f in values):
        return values
    import dataclasses

    return dataclasses.fields(obj)


def _light_replace(obj: Any, **changes: Any) -> Any:
    """``dataclasses.replace`` for record instances (a standard dataclass: the standard one)."""
    found = getattr(type(obj), "__dataclass_fields__", None)
    if found is None or not all(type(f) is Field for f in found.values()):
        import dataclasses

        return dataclasses.replace(obj, **changes)
    for name in found:
        if name not in changes:
            changes[name] = getattr(obj, name)
    return obj.__class__(**changes)


class _NotPlain(Exception):
    pass


def _light_asdict(obj: Any) -> Dict[str, Any]:
    """``dataclasses.asdict`` for records whose values are plain data (str, int, float, bool, None; lists, tuples
    and dicts of them; other records): the same dict without importing dataclasses; anything else (a value the
    standard one would deep-copy) goes to the standard one."""
    if not hasattr(type(obj), "__dataclass_fields__") or isinstance(obj, type):
        raise TypeError("asdict() should be called on dataclass instances")

    def convert(v: Any) -> Any:
        kind = type(v)
        if v is None or kind in (str, int, float, bool):
            return v
        if kind is list:
            return [convert(x) for x in v]
        if kind is tuple:
            return tuple(convert(x) for x in v)
        if kind is dict:
            return {convert(k): convert(x) for k, x in v.items()}
        found = getattr(kind, "__dataclass_fields__", None)
        if found is not None and all(type(f) is Field for f in found.values()):
            return {name: convert(getattr(v, name)) for name in found}
        raise _NotPlain

    try:
        return convert(obj)
    except _NotPlain:
        import dataclasses

        return dataclasses.asdict(obj)


def _own_fields(cls: type) -> Dict[str, Field]:
    out: Dict[str, Field] = {}
    for name, annotation in cls.__dict__.get("__annotations__", {}).items():
        text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", repr(annotation))
        if text.split("[", 1)[0].rsplit(".", 1)[-1] in ("ClassVar", "InitVar"):
            raise TypeError(f"{cls.__name__}.{name}: ClassVar/InitVar fields need dataclasses.dataclass")
        default = cls.__dict__.get(name, NO_DEFAULT)
        given = isinstance(default, Field) or _is_std_field(default)
        f = (default if isinstance(default, Field) else _from_std(default)) if given else Field(default)
        if not f.init:
            raise TypeError(f"{cls.__name__}.{name}: init=False fields need dataclasses.dataclass")
        if f._default is not NO_DEFAULT and f._default.__class__.__hash__ is None:  # list, dict, set: as dataclasses
            raise ValueError(f"mutable default {type(f._default)} for field {name} is not allowed: use default_factory")
        f.name, f.type = name, annotation
        if given:  # the class attribute becomes the plain default, as dataclasses does
            if f._default is NO_DEFAULT:
                delattr(cls, name)
            else:
                setattr(cls, name, f._default)
        out[name] = f
    return out


def _set_new(cls: type, name: str, value: Any) -> None:
    if name not in cls.__dict__:
        setattr(cls, name, value)


def _process(cls: C, frozen: bool) -> C:
    klass: type = cls
    fields: Dict[str, Field] = {}
    for base in cls.__mro__[-1:0:-1]:
        inherited = base.__dict__.get("__dataclass_fields__")
        if inherited is not None:
            if getattr(base, "__dataclass_params__").frozen != frozen:
                raise TypeError(f"{cls.__name__}: cannot mix frozen and non-frozen dataclasses")
            fields.update({n: f if isinstance(f, Field) else _from_std(f) for n, f in inherited.items()})
    fields.update(_own_fields(cls))
    names: Tuple[str, ...] = tuple(fields)
    seen_default = False
    for f in fields.values():
        has_default = f._default is not NO_DEFAULT or f._factory is not NO_DEFAULT
        if seen_default and not has_default:
            raise TypeError(f"non-default argument {f.name!r} follows default argument")
        seen_default = seen_default or has_default
    defaults = {n: f._default for n, f in fields.items() if f._default is not NO_DEFAULT}
    factories = {n: f._factory for n, f in fields.items() if f._factory is not NO_DEFAULT}
    shown = tuple(n for n, f in fields.items() if f.repr)
    compared = tuple(n for n, f in fields.items() if f.compare)
    hashed = tuple(n for n, f in fields.items() if (f.compare if f.hash is None else f.hash))
    post_init = hasattr(cls, "__post_init__")
    qualname = cls.__qualname__

    # __init__ fills the instance's __dict__ in one go: every field in order (its default, or a marker
    # for a required one), then the fresh default_factory values, then the arguments given
    template = {n: defaults.get(n, _REQUIRED) for n in names}
    required = tuple(n for n in names if n not in defaults and n not in factories)
    known = frozenset(names)

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        if args:
            if len(args) > len(names):
                raise TypeError(f"{qualname}.__init__() takes {len(names) + 1} positional arguments "
                                f"but {len(args) + 1} were given")
            for n, v in zip(names, args):
                if n in kwargs:
                    raise TypeError(f"{qualname}.__init__() got multiple values for argument {n!r}")
                kwargs[n] = v
        if not known.issuperset(kwargs):
            extra = next(k for k in kwargs if k not in known)
            raise TypeError(f"{qualname}.__init__() got an unexpected keyword argument {extra!r}")
        for n in required:
            if n not in kwargs:
                raise TypeError(f"{qualname}.__init__() missing 1 required argument: {n!r}")
        d = self.__dict__
        d.update(template)
        for n, make in factories.items():
            if n not in kwargs:
                d[n] = make()
        d.update(kwargs)
        if post_init:
            self.__post_init__()

    def __repr__(self: Any) -> str:
        return f"{self.__class__.__qualname__}({', '.join(f'{n}={getattr(self, n)!r}' for n in shown)})"

    def __eq__(self: Any, other: Any) -> Any:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return tuple(getattr(self, n) for n in compared) == tuple(getattr(other, n) for n in compared)

    _set_new(cls, "__init__", __init__)
    _set_new(cls, "__repr__", __repr__)
    user_hash = cls.__dict__.get("__hash__", NO_DEFAULT)
    explicit_hash = not (user_hash is NO_DEFAULT or (user_hash is None and "__eq__" in cls.__dict__))
    _set_new(cls, "__eq__", __eq__)
    if frozen:
        for name in ("__setattr__", "__delattr__"):
            if name in cls.__dict__:
                raise TypeError(f"Cannot overwrite attribute {name} in class {cls.__name__}")

        def __setattr__(self: Any, name: str, value: Any) -> None:
            if type(self) is cls or name in fields:
                from dataclasses import FrozenInstanceError

                raise FrozenInstanceError(f"cannot assign to field {name!r}")
            super(klass, self).__setattr__(name, value)  # type: ignore[arg-type]  # mypy narrows self by the type(self) test above

        def __delattr__(self: Any, name: str) -> None:
            if type(self) is cls or name in fields:
                from dataclasses import FrozenInstanceError

                raise FrozenInstanceError(f"cannot delete field {name!r}")
            super(klass, self).__delattr__(name)  # type: ignore[arg-type]  # mypy narrows self by the type(self) test above

        setattr(cls, "__setattr__", __setattr__)
        setattr(cls, "__delattr__", __delattr__)
        if not explicit_hash:
            def __hash__(self: Any) -> int:
                return hash(tuple(getattr(self, n) for n in hashed))

            setattr(cls, "__hash__", __hash__)
    elif not explicit_hash:
        setattr(cls, "__hash__", None)  # eq without frozen: unhashable, as dataclasses does
    setattr(cls, "__dataclass_fields__", fields)
    setattr(cls, "__dataclass_params__", SimpleNamespace(init=True, repr=True, eq=True, order=False, unsafe_hash=False,
                                                         frozen=frozen, match_args=True, kw_only=False, slots=False,
                                                         weakref_slot=False))
    _set_new(cls, "__match_args__", names)
    return cls


if TYPE_CHECKING:  # type checkers see the standard decorator and helpers, whose behaviour these have
    from dataclasses import asdict, dataclass, field, fields, replace
else:
    asdict = _light_asdict
    dataclass = light_dataclass
    field = _light_field
    fields = _light_fields
    replace = _light_replace
