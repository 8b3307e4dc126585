"""Plans: how a decode of N layers is cut into runlists.

Syntax (DESIGN.md "Cases"):

- ``"42"``: one runlist of 42 layers;
- ``"21+21"``, ``"14+14+14"``: explicit sizes, in order;
- ``"even:K"``: K runlists whose sizes differ by at most one, larger first;
- ``"max:N"``: runlists of N layers, the remainder last.

Sizes must be positive and add up to the layer count.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import repeat
from typing import overload

from harness.model.errors import PlanError

# ASCII digits only: int() also reads "４２" and "٤٢", which would name one plan twice
_EXPLICIT = re.compile(r"[0-9]+(\s*\+\s*[0-9]+)*", re.ASCII)
PLAN_WORDS = ("even", "max")      # the named forms, even:K and max:N
_NAMED = re.compile(rf"({'|'.join(PLAN_WORDS)})\s*:\s*([0-9]+)", re.ASCII)
_DIGITS = re.compile(r"[0-9]+", re.ASCII)
# The deepest plan the harness builds: XRT's own deepest runlist test is 1,000 runs, and
# every layer is a run object held in memory while the trial runs.
MAX_LAYERS = 100_000


class Cut(Sequence[int]):
    """`full` runlists of `size` layers, then one of `rest` when it is not 0: the chunks of
    a ``max:N`` plan, held as those three numbers. It equals (and hashes as) the tuple of
    its sizes. A sweep of depths 1..1024 holds thousands of plans, each with as many
    chunks as layers: as tuples they took most of the sweep's memory
    (benchmarks/report_scale.py)."""

    __slots__ = ("size", "full", "rest")

    def __init__(self, size: int, full: int, rest: int = 0) -> None:
        self.size, self.full, self.rest = size, full, rest

    def __len__(self) -> int:
        return self.full + (1 if self.rest else 0)

    def __iter__(self) -> Iterator[int]:
        yield from repeat(self.size, self.full)
        if self.rest:
            yield self.rest

    @overload
    def __getitem__(self, index: int) -> int: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[int, ...]: ...

    def __getitem__(self, index: int | slice) -> int | tuple[int, ...]:
        if isinstance(index, slice):
            return tuple(self)[index]
        length = len(self)
        if not -length <= index < length:
            raise IndexError("cut index out of range")
        return self.rest if index % length == self.full else self.size

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Cut):
            return (self.size, self.full, self.rest) == (other.size, other.full, other.rest)
        if isinstance(other, (tuple, list)):
            return len(other) == len(self) and tuple(other) == tuple(self)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return repr(tuple(self))


@dataclass(frozen=True)
class Plan:
    """A named way to cut the case's layers into runlists: its spec and the chunk sizes."""

    name: str
    spec: str
    chunks: tuple[int, ...] | Cut
    frame: str | None = None      # a capture's frame whose runs it cuts (None: the case's)

    @property
    def depth(self) -> int:
        return sum(self.chunks)

    @property
    def label(self) -> str:
        return plan_label(self.name, self.chunks)


def cut_text(chunks: Sequence[int]) -> str:
    """``21+21``; a long cut in short: ``42 x 1``, ``41 x 24 + 16``, or
    ``24+23+...+2 (9 runlists)``."""
    if len(chunks) <= 6:
        return "+".join(map(str, chunks))
    if len(set(chunks)) == 1:
        return f"{len(chunks)} x {chunks[0]}"
    if len(set(chunks[:-1])) == 1:            # XRT's chains: 41 x 24 + 16
        return f"{len(chunks) - 1} x {chunks[0]} + {chunks[-1]}"
    return f"{chunks[0]}+{chunks[1]}+...+{chunks[-1]} ({len(chunks)} runlists)"


def plan_label(name: str, chunks: Sequence[int]) -> str:
    """``monolithic 42`` or ``halves 21+21``: the name and the cut (just the cut when the
    name is the cut)."""
    cut = cut_text(chunks)
    plain = "+".join(map(str, chunks))
    if name in (cut, plain):
        return cut
    for written in (cut, plain):                       # a frame's plan: "frame_2 21+21"
        if name.endswith(" " + written):
            # cut off the whole cut: a short one has spaces of its own ("42 x 1")
            return name[:-len(written)] + cut
    return f"{name} {cut}"


def plan_file_stem(name: str) -> str:
    """A plan name as part of a file name (`run_cut_21_21.sh` for plan `cut 21+21`); a long
    one (a sweep's 1+1+...+1 cut) is shortened with a digest of the whole, so names stay
    unique and below NAME_MAX."""
    safe = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in name)
    if len(safe) <= 48:
        return safe
    import hashlib  # a long name only: a report's readers load plans, never name files
    return f"{safe[:32]}-{hashlib.sha256(name.encode()).hexdigest()[:10]}"


def parse_plan(spec: str | int, layers: int) -> tuple[int, ...]:
    """Return the chunk sizes `spec` describes for `layers` layers, or raise PlanError."""
    if isinstance(spec, bool) or not isinstance(spec, (str, int)):
        raise PlanError(f"plan {spec!r} must be a string such as \"21+21\" or a number")
    if layers < 1:
        raise PlanError(f"the layer count must be at least 1, not {layers}")
    if layers > MAX_LAYERS:
        raise PlanError(f"{layers:,} layers is past the {MAX_LAYERS:,} a plan may have")
    text = str(spec).strip()
    if len(text) > 8 * MAX_LAYERS:
        raise PlanError(f"a plan spec of {len(text):,} characters is longer than any plan of "
                        f"at most {MAX_LAYERS:,} layers")
    longest = max((len(run) for run in _DIGITS.findall(text)), default=0)
    if longest > 18:
        # read as a number only once it could be one (int() of 4,300 digits refuses)
        raise PlanError(f"plan {_shown(text)!r} has a size of {longest:,} digits, past the "
                        f"{MAX_LAYERS:,} layers a plan may have")
    named = _NAMED.fullmatch(text)
    if named:
        kind, n = named.group(1), int(named.group(2))
        if n < 1:
            raise PlanError(f"plan {text!r}: {kind}:N needs N >= 1")
        if kind == "even":
            if n > layers:
                raise PlanError(f"plan {text!r} asks for {n} runlists but there are only "
                                f"{layers} layers")
            base, extra = divmod(layers, n)
            return tuple(base + 1 if i < extra else base for i in range(n))
        full, rest = divmod(layers, n)
        return (n,) * full + ((rest,) if rest else ())
    if not _EXPLICIT.fullmatch(text):
        raise PlanError(f"plan {text!r} does not parse; use \"42\", \"21+21\", \"even:K\" "
                        "or \"max:N\"")
    chunks = tuple(int(part) for part in text.split("+"))
    if any(c < 1 for c in chunks):
        raise PlanError(f"plan {text!r} has an empty runlist; every size must be >= 1")
    if sum(chunks) != layers:
        raise PlanError(f"plan {text!r} covers {sum(chunks)} layers, the case has {layers}")
    return chunks


def _shown(text: str) -> str:
    """A spec as an error quotes it: whole when short, its ends when long."""
    return text if len(text) <= 60 else f"{text[:40]}...{text[-12:]}"


def make_plan(name: str, spec: str | int, layers: int) -> Plan:
    return Plan(name, str(spec).strip(), parse_plan(spec, layers))


def plan_for_depth(depth: int, chunk: str | int | None = None) -> Plan:
    """A plan for an arbitrary depth: one runlist, or `chunk` as ``max:N`` style spec."""
    if chunk is None:
        return make_plan(str(depth), str(depth), depth)
    spec = chunk if isinstance(chunk, str) and ":" in chunk else f"max:{chunk}"
    chunks: tuple[int, ...] | Cut = parse_plan(spec, depth)
    name = "+".join(map(str, chunks))
    if spec.startswith("max:") and len(chunks) > 1:
        size = chunks[0]
        chunks = Cut(size, depth // size, depth % size)
    return Plan(name, spec, chunks)
