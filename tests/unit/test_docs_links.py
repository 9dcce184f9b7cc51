"""The README, ARCHITECTURE.md and docs/ point at things that exist: links, their anchors, repository paths, tests, modules.

The docs name the test that proves each guarantee and the file where each
change goes; a test or module that moves or is renamed must take its mentions
along, or a reader follows a path into nothing.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = sorted([ROOT / "README.md", ROOT / "ARCHITECTURE.md", *(ROOT / "docs").glob("*.md")])
PACKAGE_DIRS = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]

# Paths the docs name that are not this repository's, and why.
FOREIGN_PATHS = {
    "docs/research/long-horizon-agent-benchmarks/benchmark-run-ledger.json": "where LoopX's own repository keeps its run ledger",
}

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
REPOSITORY_PATH = re.compile(r"`((?:tests|ledger|cli|projections|docs|benchmarks|examples|migrations|src|\.ci)/[^`\s]*)`")
MODULE = re.compile(r"python -m ([\w.]+)")
# A placeholder (`projections/<review>.py`) or a pattern (`test_1_*`, `…_shown_escaped`) names no one file or test.
PATTERN = re.compile(r"[<>*…]")


def _anchor(heading: str) -> str:
    """GitHub's anchor of a markdown heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.replace("`", "").strip().lower()).replace(" ", "-")


def _anchors(document: Path) -> set[str]:
    return {_anchor(line.lstrip("#")) for line in document.read_text(encoding="utf-8").splitlines() if line.startswith("#")}


def _module_file(name: str) -> Path | None:
    """The file of module ``name`` in this checkout: an installed name through its folder (``package-dir``), else as named."""
    folder, rest = ROOT, name.split(".")
    package = max((p for p in PACKAGE_DIRS if name == p or name.startswith(p + ".")), key=len, default=None)
    if package is not None:
        folder, rest = ROOT / PACKAGE_DIRS[package], name[len(package) + 1 :].split(".") if name != package else []
    base = folder.joinpath(*rest)
    for candidate in (base.with_suffix(".py") if rest else None, base / "__main__.py"):
        if candidate is not None and candidate.exists():
            return candidate
    return None


def broken_links(document: Path) -> list[str]:
    """The links of ``document`` to a file that does not exist, or to a heading its file does not have."""
    broken = []
    for target in LINK.findall(document.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target):
            continue  # (a web address)
        path, _, anchor = target.partition("#")
        linked = (document.parent / path).resolve() if path else document
        if not linked.exists():
            broken.append(f"{target}: no such file")
        elif anchor and anchor not in _anchors(linked):
            broken.append(f"{target}: no heading #{anchor} in {linked.name}")
    return broken


def missing_references(document: Path) -> list[str]:
    """The repository paths, tests (``path::test``) and ``python -m`` modules ``document`` names that do not exist."""
    text = document.read_text(encoding="utf-8")
    missing = []
    for cited in REPOSITORY_PATH.findall(text):
        path, _, test = cited.partition("::")
        if path in FOREIGN_PATHS or PATTERN.search(path):
            continue
        if not (ROOT / path).exists():
            missing.append(f"{cited}: no such path")
        elif test and not PATTERN.search(test) and not re.search(rf"def {re.escape(test)}\(", (ROOT / path).read_text(encoding="utf-8")):
            missing.append(f"{cited}: no such test")
    for module in MODULE.findall(text):
        if module not in ("pytest", "venv", "pip") and _module_file(module) is None:
            missing.append(f"python -m {module}: no such module")
    return missing


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda d: str(d.relative_to(ROOT)))
def test_every_link_and_anchor_resolves(document):
    assert broken_links(document) == []


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda d: str(d.relative_to(ROOT)))
def test_every_repository_path_test_and_module_named_exists(document):
    assert missing_references(document) == []


def test_what_does_not_exist_is_reported(tmp_path):
    (tmp_path / "other.md").write_text("# Other\n")
    document = tmp_path / "stale.md"
    document.write_text(
        "# Title\n\n[a](nowhere.md) [b](#no-such-heading) [c](#title) [d](other.md#other) [e](other.md#gone)\n\n"
        "`tests/no_such_test_file.py`, `tests/unit/test_docs_links.py::test_no_such_test`, `tests/unit/test_docs_links.py::test_what_does_not_exist_is_reported`,"
        " `projections/<review>.py`, `python -m benchmarks.no_such_module`, `python -m benchledger`\n"
    )
    assert broken_links(document) == ["nowhere.md: no such file", "#no-such-heading: no heading #no-such-heading in stale.md", "other.md#gone: no heading #gone in other.md"]
    assert missing_references(document) == [
        "tests/no_such_test_file.py: no such path",
        "tests/unit/test_docs_links.py::test_no_such_test: no such test",
        "python -m benchmarks.no_such_module: no such module",
    ]
