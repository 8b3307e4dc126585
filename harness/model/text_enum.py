"""A closed set of words that stays a string where it goes.

Kinds the harness writes into reports and messages (a case's kind, a backend's, how a
driver notices a hang, a bisect answer) are enums of this type: a misspelt kind is an
AttributeError where it is written, not a branch silently never taken, and the value
still compares equal to its word, formats as it, and is written as it in JSON and YAML
(`harness.formats.yamlio` represents it as its value).
"""

from __future__ import annotations

from enum import Enum


class TextEnum(str, Enum):
    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)
