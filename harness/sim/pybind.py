"""What pybind11 does at the binding's edge, so the simulated pyxrt fails where the real
one fails: enums, argument conversion, overload resolution and release-gated names.

- `py::enum_` values equal only values of their own enum (never plain ints), know
  their `.name` (``???`` for a value without one) and `.value`, and convert with
  `int()`/`__index__`.
- An argument converts only if pybind11's caster accepts it: a C ``int`` takes a
  Python int in range or an object with ``__index__`` (a numpy integer), never a
  float; unsigned types refuse negatives; an enum parameter takes only that enum;
  ``std::chrono`` and unregistered pointer types (``const axlf*``,
  ``xrt::pid_type``) take nothing, since the binding registers no caster for them.
- When no overload accepts the arguments, TypeError with pybind11's text: the
  overloads offered (parameters named only where the binding gives `py::arg` names,
  which it does from 2.23 and only for some functions; ``argN`` otherwise), then
  ``Invoked with:`` the arguments' reprs, ``self`` first for a method, and ``; kwargs:``.
  Keyword arguments match only named parameters; a missing or extra argument is the
  same TypeError, never Python's own "missing 1 required positional argument".
- Names that exist only from (or until) some XRT release are attributes that raise
  AttributeError on the other releases, so ``hasattr`` answers as the real module.
- Objects are `pyxrt.` objects: their classes live in module ``pyxrt`` (``pyxrt.ext``,
  ``pyxrt.aie``), so a repr reads ``<pyxrt.device object at 0x...>``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from harness.sim.releases import KEYWORDS, XrtRelease

if TYPE_CHECKING:
    class _WithMembers(type):
        """For the type checker only: an enum's members are set on its class at run time
        (`make_enum`), from the table of the pyxrt enum it stands for."""

        def __getattr__(cls, name: str) -> PybindEnum: ...
else:
    _WithMembers = type


class PybindEnum(metaclass=_WithMembers):
    """A `py::enum_` value: any int, `.name`/`.value`, equal only to its own enum."""

    __slots__ = ("_value",)
    _names: dict[int, str] = {}
    __members__: dict[str, Any] = {}

    def __init__(self, value: int) -> None:
        self._value = int(value)

    @property
    def value(self) -> int:
        return self._value

    @property
    def name(self) -> str:
        return self._names.get(self._value, "???")

    def __int__(self) -> int:
        return self._value

    __index__ = __int__

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other._value == self._value

    def __hash__(self) -> int:
        return hash((type(self).__name__, self._value))

    def __repr__(self) -> str:
        return f"<{type(self).__name__}.{self.name}: {self._value}>"

    def __str__(self) -> str:
        return f"{type(self).__name__}.{self.name}"


def make_enum(name: str, members: dict[str, int], *,
              methods: dict[str, Any] | None = None) -> type[PybindEnum]:
    names: dict[int, str] = {}
    for key, value in members.items():
        names.setdefault(value, key)       # pybind11 names a shared value by its first entry
    cls = cast("type[PybindEnum]", type(name, (PybindEnum,),
                                        {"__slots__": (), **(methods or {}), "_names": names}))
    for key, value in members.items():
        setattr(cls, key, cls(value))
    cls.__members__ = {key: getattr(cls, key) for key in members}
    return cls


# -- casters --------------------------------------------------------------------------

class NoMatch(Exception):
    """This argument does not convert to this parameter type."""


Caster = Callable[[Any], Any]


def _integer(value: Any) -> int:
    if isinstance(value, (float, str, bytes)):
        raise NoMatch
    if isinstance(value, int):
        return int(value)
    index = getattr(type(value), "__index__", None)
    if index is None:
        raise NoMatch
    try:
        return int(index(value))
    except (TypeError, ValueError):     # pybind11 clears it: this overload does not match
        raise NoMatch from None


def c_int(bits: int = 32, signed: bool = True) -> Caster:
    low, high = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)

    def cast(value: Any) -> int:
        number = _integer(value)
        if not low <= number <= high:
            raise NoMatch
        return number
    return cast


INT = c_int()
UINT = c_int(32, False)
SIZE_T = c_int(64, False)
UINT64 = SIZE_T


def instance_of(cls: type | Callable[[], type]) -> Caster:
    def cast(value: Any) -> Any:
        wanted = cls if isinstance(cls, type) else cls()
        if not isinstance(value, wanted):
            raise NoMatch
        return value
    return cast


def text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    raise NoMatch


def buffer(value: Any) -> memoryview:
    try:
        return memoryview(value).cast("B")
    except TypeError:
        raise NoMatch from None


def cfg_params(value: Any) -> dict[str, int]:
    if not isinstance(value, dict):
        raise NoMatch
    return {text(k): UINT(v) for k, v in value.items()}


def never(value: Any) -> Any:
    """std::chrono::milliseconds, const axlf*, xrt::pid_type: no caster is registered."""
    raise NoMatch


def anything(value: Any) -> Any:
    return value


@dataclass(frozen=True)
class Overload:
    """One overload of a binding's function: its signature, parameters and the releases that
    have it."""

    signature: str                      # as pybind11 prints it, with py::arg names
    params: tuple[tuple[str, Caster], ...]
    # what it calls with the object first: a function, or the name of the object's method
    # (looked up at each call, so that what wraps the method later is called too)
    call: Callable[..., Any] | str
    available: Callable[[XrtRelease], bool] = lambda release: True
    named: bool = False                 # the binding gives py::arg names (2.23 on)

    def bind(self, args: Sequence[Any], kwargs: dict[str, Any], names: bool) -> list[Any]:
        if len(args) + len(kwargs) != len(self.params) or (kwargs and not names):
            raise NoMatch
        values = list(args)
        for name, _ in self.params[len(args):]:
            if name not in kwargs:
                raise NoMatch
            values.append(kwargs[name])
        return [cast(value) for (_, cast), value in zip(self.params, values, strict=True)]

    def shown(self, release: XrtRelease) -> str:
        return self.signature if self.named and release.has(KEYWORDS) else \
            unnamed(self.signature)


def nothing(obj: Any, *values: Any) -> None:
    """An overload that does nothing with what it was given (an empty handle's)."""


class Overloads:
    """One function's overloads as the binding registers them: made once, beside the class,
    and called with the object they act on (`obj`). Building them at every call cost the
    simulated binding more than what most of its calls then do."""

    def __init__(self, name: str, owner: str, overloads: Sequence[Overload], *,
                 constructor: bool = False) -> None:
        self.name, self.owner, self.constructor = name, owner, constructor
        self.overloads = tuple(overloads)
        # per release (by name): the overloads it has, and whether it names parameters
        self._offered: dict[str, tuple[tuple[Overload, ...], bool]] = {}

    def __call__(self, obj: Any, release: XrtRelease, args: Sequence[Any],
                 kwargs: dict[str, Any], owner: str | None = None) -> Any:
        """Call the first overload of `release` that accepts the arguments, on `obj`, as
        pybind11 does; its TypeError when none does (`owner`: the class as the error
        names it, where it is not this one's)."""
        offered = self._offered.get(release.name)
        if offered is None:
            offered = self._offered[release.name] = (
                tuple(o for o in self.overloads if o.available(release)),
                release.has(KEYWORDS))
        overloads, names = offered
        for overload in overloads:
            try:
                values = overload.bind(args, kwargs, names and overload.named)
            except NoMatch:
                continue
            call = overload.call
            if isinstance(call, str):
                return getattr(obj, call)(*values)
            return call(obj, *values)
        invoked = list(args) if self.constructor else [obj, *args]
        raise incompatible(self.name, [o.shown(release) for o in overloads],
                           f"pyxrt.{owner or self.owner}", invoked, kwargs,
                           constructor=self.constructor)


def _split_params(inner: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for at, ch in enumerate(inner):
        if ch in "[(<":
            depth += 1
        elif ch in "])>":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(inner[start:at].strip())
            start = at + 1
    tail = inner[start:].strip()
    return parts + [tail] if tail else parts


def unnamed(signature: str) -> str:
    """The signature as pybind11 prints it without py::arg: parameters arg0, arg1, ..."""
    close = signature.find(") ->") if ") ->" in signature else signature.rfind(")")
    params = _split_params(signature[1:close])
    out, index = [], 0
    for param in params:
        name, _, kind = param.partition(": ")
        if name == "self" or not kind:
            out.append(param)
            continue
        out.append(f"arg{index}: {kind}")
        index += 1
    return "(" + ", ".join(out) + signature[close:]


def incompatible(name: str, signatures: Sequence[str], owner: str, args: Sequence[Any],
                 kwargs: dict[str, Any] | None = None, *, constructor: bool = False
                 ) -> TypeError:
    """pybind11's TypeError; `args` start with self for a method."""
    kind = "constructor" if constructor else "function"
    lines = [f"{name}(): incompatible {kind} arguments. The following argument types are "
             "supported:"]
    lines += [f"    {i}. {owner}{sig}" if constructor else f"    {i}. {sig}"
              for i, sig in enumerate(signatures, 1)]
    invoked = ", ".join(repr(a) for a in args)
    if kwargs:
        invoked += ("; " if args else "") + "kwargs: " + ", ".join(
            f"{k}={v!r}" for k, v in kwargs.items())
    lines += ["", "Invoked with: " + invoked]
    return TypeError("\n".join(lines))


def method(signature: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A method with one overload: pybind11's TypeError for a wrong argument count or any
    keyword (the binding names no parameter of these), with `signature` unnamed."""
    shown = unnamed(signature)
    count = len(_split_params(signature[1:signature.find(") ->")])) - 1

    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def call(self: Any, *args: Any, **kwargs: Any) -> Any:
            if kwargs or len(args) != count:
                raise incompatible(fn.__name__, [shown], "", [self, *args], kwargs)
            return fn(self, *args)
        return call
    return wrap


class Gated:
    """A class attribute that exists only on the releases `present` accepts."""

    def __init__(self, value: Any, present: Callable[[XrtRelease], bool],
                 current: Callable[[], XrtRelease]) -> None:
        self.value = value
        self.present = present
        self.current = current
        self.name = ""
        self.owner = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name, self.owner = name, owner.__name__

    def __get__(self, obj: Any, cls: type | None = None) -> Any:
        if not self.present(self.current()):
            target = f"'{self.owner}' object" if obj is not None else \
                f"type object 'pyxrt.{self.owner}'"
            raise AttributeError(f"{target} has no attribute '{self.name}' (not in XRT "
                                 f"{self.current().name}'s binding)")
        value = self.value
        if obj is not None and hasattr(value, "__get__"):
            return value.__get__(obj, cls)
        return value
