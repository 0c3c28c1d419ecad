"""Records: what kfdguard uses of dataclasses, at a fraction of the import cost.

The service runs before the display manager, and importing ``dataclasses``
(which imports ``inspect``, ``ast``, ``dis``, ``tokenize``) plus generating
code for some eighty classes with ``exec`` cost about half of the time from
process start to READY. These records build each class from closures instead:
no ``exec``, no ``inspect``.

For the type checker ``dataclass``, ``field``, ``replace`` and ``asdict`` *are*
those of ``dataclasses`` (the names are re-exported under ``TYPE_CHECKING``),
so mypy checks constructors, frozenness and ``replace`` exactly as before. The
runtime supports the subset kfdguard uses: ``frozen``, ``slots``, defaults,
``field(default=...)``, ``field(default_factory=...)``, ``__post_init__``,
inheritance of fields, equality, hashing of frozen records, ``repr``,
``replace`` and ``asdict``. ``tests/unit/test_record.py`` holds it to the
behaviour of ``dataclasses`` on each of these.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any
if TYPE_CHECKING:
    from dataclasses import FrozenInstanceError, asdict, dataclass, field, replace
else:
    from itertools import repeat

    class _Missing:
        def __repr__(self) -> str:
            return "MISSING"

    MISSING = _Missing()
    _FIELDS = "__record_fields__"

    class FrozenInstanceError(AttributeError):
        """Assigning to a field of a frozen record (as dataclasses.FrozenInstanceError)."""

    class Field:
        __slots__ = ("default", "default_factory")

        def __init__(self, default: Any, default_factory: Any) -> None:
            self.default = default
            self.default_factory = default_factory

    def field(*, default: Any = MISSING, default_factory: Any = MISSING) -> Any:
        if default is not MISSING and default_factory is not MISSING:
            raise ValueError("cannot specify both default and default_factory")
        return Field(default, default_factory)

    _CLASSVAR = ("ClassVar", "typing.ClassVar")
    # A tuple, not list | dict | set: isinstance with a tuple is the cheaper check, run once per field.
    _MUTABLE = (list, dict, set)

    def _collect(cls: type) -> tuple[tuple[str, Any, Any], ...]:
        """(name, default, factory) for every field, base classes' first, as dataclasses orders them."""
        # Run for each of the ~90 record classes on the boot path: plain loops over the class dict, no
        # per-field helper calls (they were most of a record's cost at import).
        fields = {}
        for base in reversed(cls.__mro__[1:-1]):  # object, last, has none
            for spec in base.__dict__.get(_FIELDS, ()):
                fields[spec[0]] = spec
        own = cls.__dict__
        # inspect.get_annotations is what this module exists to avoid importing.
        for name, annotation in own.get("__annotations__", {}).items():
            if (annotation if type(annotation) is str else getattr(annotation, "__name__", "")).startswith(_CLASSVAR):
                continue
            value = own.get(name, MISSING)
            if type(value) is Field:
                spec = (name, value.default, value.default_factory)
            else:
                if isinstance(value, _MUTABLE):
                    # ValueError, as dataclasses raises.
                    raise ValueError(f"mutable default {type(value).__name__} for {name}: use default_factory")
                spec = (name, value, MISSING)
            fields[name] = spec  # a field redefined keeps its base class's place, as in dataclasses
        specs = tuple(fields.values())
        seen_default = False
        for name, default, factory in specs:
            if default is not MISSING or factory is not MISSING:
                seen_default = True
            elif seen_default:
                raise TypeError(f"non-default argument {name!r} follows default argument")
        return specs

    def _keywords(cls_name: str, values: list[Any], kwargs: dict[str, Any], index: dict[str, int], given: int) -> None:
        for key, value in kwargs.items():
            i = index.get(key)
            if i is None:
                raise TypeError(f"{cls_name}() got an unexpected keyword argument {key!r}")
            if i < given:
                raise TypeError(f"{cls_name}() got multiple values for argument {key!r}")
            values[i] = value

    def _starts(specs: tuple[tuple[str, Any, Any], ...]) -> tuple[tuple[Any, ...], tuple[tuple[int, Any], ...]]:
        """What each field not given starts as (its default, or MISSING: required, or made by its
        factory), and the factories by position. Worked out once per class: __init__ runs for every
        record the boot pass builds (a generic per-field loop over the specs cost ~3,500 instructions
        a field, three times this one)."""
        start: list[Any] = []
        made: list[tuple[int, Any]] = []
        for i, (_name, default, factory) in enumerate(specs):
            start.append(default if factory is MISSING else MISSING)
            if factory is not MISSING:
                made.append((i, factory))
        return tuple(start), tuple(made)

    def _make_init(specs: tuple[tuple[str, Any, Any], ...], names: tuple[str, ...], post_init: Any) -> Any:
        count = len(names)
        index = dict(zip(names, range(count), strict=True))
        template, factories = _starts(specs)
        setter = object.__setattr__

        def values_of(cls_name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any]:
            # Python's own errors, in Python's order: too many, unknown, twice, then missing.
            given = len(args)
            if given > count:
                raise TypeError(f"{cls_name}() takes {count} positional arguments but {given} were given")
            values = [*args, *template[given:]]
            if kwargs:
                _keywords(cls_name, values, kwargs, index, given)
            for i, factory in factories:
                if values[i] is MISSING:
                    values[i] = factory()
            for name, value in zip(names, values, strict=True):
                if value is MISSING:
                    raise TypeError(f"{cls_name}() missing required argument: {name!r}")
            return values

        def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
            # Every field given by position (as a long log's thousands of events are) needs no defaults or
            # checks. The fields are set in C: the setter returns None, so any() runs it for every field.
            values = args if len(args) == count and not kwargs else values_of(type(self).__name__, args, kwargs)
            any(map(setter, repeat(self), names, values))
            if post_init is not None:
                post_init(self)

        return __init__

    def _values(self: Any) -> tuple[Any, ...]:
        return tuple(getattr(self, spec[0]) for spec in getattr(type(self), _FIELDS))

    def __eq__(self: Any, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return _values(self) == _values(other)

    def _hash(self: Any) -> int:
        return hash(_values(self))

    def __repr__(self: Any) -> str:
        parts = ", ".join(f"{spec[0]}={getattr(self, spec[0])!r}" for spec in getattr(type(self), _FIELDS))
        return f"{type(self).__qualname__}({parts})"

    def _frozen_setattr(self: Any, name: str, value: Any) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def _frozen_delattr(self: Any, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def _slots_getstate(self: Any) -> tuple[Any, ...]:
        return _values(self)

    def _slots_setstate(self: Any, state: tuple[Any, ...]) -> None:
        for spec, value in zip(getattr(type(self), _FIELDS), state, strict=True):
            object.__setattr__(self, spec[0], value)

    def _process(cls: type, frozen: bool, slots: bool) -> type:
        specs = _collect(cls)
        names = tuple([spec[0] for spec in specs])
        namespace = dict(cls.__dict__)
        if slots:
            _slot_namespace(cls, names, namespace)
        else:
            _plain_namespace(specs, namespace)
        namespace[_FIELDS] = specs
        namespace["__match_args__"] = names
        namespace["__init__"] = _make_init(specs, names, namespace.get("__post_init__"))
        namespace.setdefault("__repr__", __repr__)
        if "__eq__" not in cls.__dict__:
            namespace["__eq__"] = __eq__
        if "__hash__" not in cls.__dict__ or cls.__dict__["__hash__"] is None:
            # dataclasses: eq without frozen makes instances unhashable; frozen hashes the fields.
            namespace["__hash__"] = _hash if frozen else None
        if frozen:
            namespace["__setattr__"] = _frozen_setattr
            namespace["__delattr__"] = _frozen_delattr
        if slots:
            new = type(cls)(cls.__name__, cls.__bases__, namespace)
            new.__qualname__ = cls.__qualname__
            return new
        _install(cls, namespace, names)
        return cls

    def _slot_namespace(cls: type, names: tuple[str, ...], namespace: dict[str, Any]) -> None:
        # A slot and a class attribute of the same name cannot coexist: defaults live in the specs.
        for name in names:
            namespace.pop(name, None)
        namespace.pop("__dict__", None)
        namespace.pop("__weakref__", None)
        # Slots a base class already has are not declared again; most records have no base but object.
        inherited = [s for b in cls.__mro__[1:-1] if (s := getattr(b, "__slots__", ()))]
        own = tuple(n for n in names if not any(n in s for s in inherited)) if inherited else names
        namespace["__slots__"] = own
        namespace["__getstate__"] = _slots_getstate
        namespace["__setstate__"] = _slots_setstate

    def _plain_namespace(specs: tuple[tuple[str, Any, Any], ...], namespace: dict[str, Any]) -> None:
        for name, default, _factory in specs:
            if name in namespace and isinstance(namespace[name], Field):
                if default is MISSING:
                    del namespace[name]
                else:
                    namespace[name] = default

    def _install(cls: type, namespace: dict[str, Any], names: tuple[str, ...]) -> None:
        for key, value in namespace.items():
            if cls.__dict__.get(key, MISSING) is not value and key not in ("__dict__", "__weakref__"):
                setattr(cls, key, value)
        for name in names:
            if name in cls.__dict__ and name not in namespace:
                delattr(cls, name)  # a field(default_factory=...) placeholder

    def dataclass(cls: type | None = None, /, *, frozen: bool = False, slots: bool = False) -> Any:
        def wrap(c: type) -> type:
            return _process(c, frozen, slots)

        return wrap if cls is None else wrap(cls)

    def replace(obj: Any, /, **changes: Any) -> Any:
        specs = getattr(type(obj), _FIELDS, None)
        if specs is None:
            raise TypeError("replace() should be called on record instances")
        values = {spec[0]: getattr(obj, spec[0]) for spec in specs}
        for key in changes:
            if key not in values:
                raise TypeError(f"{type(obj).__name__}.__init__() got an unexpected keyword argument {key!r}")
        values.update(changes)
        return type(obj)(**values)

    def asdict(obj: Any) -> Any:
        if getattr(type(obj), _FIELDS, None) is None:
            raise TypeError("asdict() should be called on record instances")
        return _asdict(obj)

    def _asdict(value: Any) -> Any:
        specs = getattr(type(value), _FIELDS, None)
        if specs is not None:
            return {spec[0]: _asdict(getattr(value, spec[0])) for spec in specs}
        if isinstance(value, tuple) and hasattr(value, "_fields"):
            return type(value)(*[_asdict(v) for v in value])
        if isinstance(value, list | tuple):
            return type(value)(_asdict(v) for v in value)
        if isinstance(value, dict):
            return type(value)((_asdict(k), _asdict(v)) for k, v in value.items())
        return value


__all__ = ["FrozenInstanceError", "asdict", "dataclass", "field", "replace"]
