"""The LoopX 0.4.8 conformance corpus (a byte-identical copy of ../shared/conformance), and its mode-alias cases.

``aliases/`` holds corpus cases with their modes respelled and LoopX's answers
to them, recorded by ``python -m tests.conformance.record_aliases``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
CORPUS = HERE / "corpus"
MARKDOWN = HERE / "markdown"
ALIASES = HERE / "aliases"


@dataclass(frozen=True)
class Case:
    directory: Path
    command: str
    args: list[str]
    expected_exit: int
    volatile: list[str]

    @property
    def id(self) -> str:
        return f"{self.directory.parent.parent.name}/{self.command}/{self.directory.name}"

    @property
    def expected(self) -> Any:
        return json.loads((self.directory / "expected.json").read_text(encoding="utf-8"))

    @property
    def markdown(self) -> tuple[str, int]:
        base = MARKDOWN / self.command / f"{self.directory.parent.parent.name}--{self.directory.name}"
        return (
            base.with_suffix(".md").read_text(encoding="utf-8"),
            int(base.with_suffix(".exit").read_text()),
        )


def load_cases(commands: set[str] | None = None, *, aliases: bool = False) -> list[Case]:
    """The corpus cases (of ``commands``), and with ``aliases`` the recorded mode-alias cases after them."""
    cases = []
    case_files = sorted(CORPUS.glob("*/*/*/case.json")) + (sorted(ALIASES.glob("*/*/case.json")) if aliases else [])
    for case_json in case_files:
        spec = json.loads(case_json.read_text(encoding="utf-8"))
        if commands is not None and spec["command"] not in commands:
            continue
        cases.append(
            Case(case_json.parent, spec["command"], spec["args"], spec["expected_exit"], spec["volatile"])
        )
    return cases


def _pointer_matches(pattern: list[str], path: tuple[str, ...]) -> bool:
    return len(pattern) == len(path) and all(p in ("*", q) for p, q in zip(pattern, path))


def strip_volatile(value: Any, pointers: list[str], path: tuple[str, ...] = ()) -> Any:
    """Drop every field whose JSON pointer matches one of ``pointers`` (``*`` matches any step)."""
    patterns = [p.split("/")[1:] for p in pointers]
    if any(_pointer_matches(p, path) for p in patterns):
        return None
    if isinstance(value, dict):
        return {
            k: strip_volatile(v, pointers, path + (k,))
            for k, v in value.items()
            if not any(_pointer_matches(p, path + (k,)) for p in patterns)
        }
    if isinstance(value, list):
        return [strip_volatile(v, pointers, path + (str(i),)) for i, v in enumerate(value)]
    return value


def typed(value: Any) -> Any:
    """A form in which ``==`` is JSON equality: 1, 1.0 and true differ, NaN equals NaN."""
    if isinstance(value, dict):
        return ("object", {k: typed(v) for k, v in value.items()})
    if isinstance(value, list):
        return ("array", [typed(v) for v in value])
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, float):
        return ("float", "nan" if math.isnan(value) else value)
    return (type(value).__name__, value)
