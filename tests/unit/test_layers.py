"""The package's shape: one import namespace, and imports that run cli -> ledger -> projections only.

import-linter reads the package from disk. The README's strict editable install
(``editable_mode=strict``) links the layers' folders into one ``benchledger``
tree (under ``build/``), which it reads as it reads a wheel; a lenient editable
install maps them by name only, and import-linter then reports the layers missing.
A test that a contract breaks adds an import to a copy laid out as the wheel
lays it out, so the checkout is never edited.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import benchledger

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
PACKAGE_DIRS = PYPROJECT["tool"]["setuptools"]["package-dir"]


def wheel_layout(target: Path) -> Path:
    """Copy each mapped folder to where the wheel puts it; return the folder to put on sys.path."""
    for package, folder in sorted(PACKAGE_DIRS.items()):
        shutil.copytree(
            ROOT / folder,
            target.joinpath(*package.split(".")),
            ignore=shutil.ignore_patterns("__pycache__"),
            dirs_exist_ok=True,
        )
    return target


def lint_imports(cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``lint-imports`` with pyproject.toml's contracts, run in ``cwd``."""
    return subprocess.run(
        [str(Path(sys.executable).with_name("lint-imports")), "--no-cache", "--config", str(ROOT / "pyproject.toml")],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
    )


def test_the_layer_contract_holds():
    """``lint-imports`` as .ci/run runs it: from the checkout, on the installed package, which holds every module.

    A strict editable install links the files it found when it was made: a
    module added since is not there, and import-linter would not see it.
    """
    installed = Path(benchledger.__file__).parent
    missing = [
        str(module.relative_to(ROOT))
        for package, folder in PACKAGE_DIRS.items()
        for module in (ROOT / folder).rglob("*.py")
        if not installed.joinpath(*package.split(".")[1:], module.relative_to(ROOT / folder)).exists()
    ]
    assert missing == [], "not in the installed package: pip install -e '.[test]' --config-settings editable_mode=strict again"
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    contracts = len(PYPROJECT["tool"]["importlinter"]["contracts"])
    assert f"Contracts: {contracts} kept, 0 broken." in result.stdout


def test_the_contracts_are_the_ones_the_design_names():
    layers, rooms, cli_on_the_api = PYPROJECT["tool"]["importlinter"]["contracts"]
    assert layers["type"] == "layers"
    assert layers["layers"] == ["benchledger.cli", "benchledger.ledger", "benchledger.projections"]
    assert rooms["type"] == "layers" and rooms["containers"] == ["benchledger.ledger"]
    assert rooms["layers"] == ["service", "read", "storage"]
    assert cli_on_the_api["type"] == "forbidden" and cli_on_the_api["source_modules"] == ["benchledger.cli"]
    assert cli_on_the_api["forbidden_modules"] == [f"benchledger.ledger.{room}" for room in ("storage", "service", "read")]
    assert cli_on_the_api["allow_indirect_imports"] is True
    assert "ignore_imports" not in cli_on_the_api  # (no command is let off)


def test_the_cli_calls_the_ledger_through_its_api_only(tmp_path):
    """The forbidden contract is checked, not only declared: a command importing a room breaks it."""
    site = wheel_layout(tmp_path / "site")
    (site / "benchledger" / "cli" / "queries.py").write_text(
        (ROOT / "cli" / "queries.py").read_text() + "\nfrom benchledger.ledger.read import views  # noqa\n"
    )
    result = lint_imports(tmp_path, {**os.environ, "PYTHONPATH": str(site)})
    assert result.returncode == 1
    assert "cli calls the library API, never the ledger's rooms BROKEN" in result.stdout
    assert "benchledger.cli.queries -> benchledger.ledger.read.views" in result.stdout


def test_every_package_folder_is_listed_for_the_wheel():
    """setuptools cannot discover packages through the mapping, so the list is explicit; keep it complete."""
    found = {"benchledger"}
    for package, folder in PACKAGE_DIRS.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            relative = init.parent.relative_to(ROOT / folder)
            found.add(".".join([package, *relative.parts]))
    assert sorted(found) == sorted(PYPROJECT["tool"]["setuptools"]["packages"])


def test_no_generic_top_level_name_is_importable_outside_the_checkout(tmp_path):
    probe = "import importlib.util as u; print([n for n in ('cli', 'ledger', 'projections', 'migrations') if u.find_spec(n)])"
    result = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"
    subprocess.run([sys.executable, "-c", "import benchledger.cli.main, benchledger.ledger, benchledger.projections"], cwd=tmp_path, check=True)


@pytest.mark.parametrize("bare", ["cli", "ledger", "ledger.storage.canonical", "projections", "migrations"])
def test_from_the_repository_root_a_layer_refuses_its_bare_name(bare):
    """There ``import ledger`` finds the folder: it would load a second copy of its modules beside benchledger.ledger's."""
    layer = bare.split(".")[0]
    refused = subprocess.run([sys.executable, "-c", f"import {bare}"], cwd=ROOT, capture_output=True, text=True)
    assert refused.returncode == 1
    assert refused.stderr.splitlines()[-1].startswith(f"ImportError: import benchledger.{layer}, not {layer}: ")
    subprocess.run([sys.executable, "-c", f"import benchledger.{layer}"], cwd=ROOT, check=True)


LONG_MODULE_LINES = 500
LONG_MODULE_REASON = "Longer than 500 lines:"


def test_a_module_of_the_ledger_over_500_lines_says_why():
    """A module in ledger/ longer than 500 lines states the reason in its docstring, on a line starting ``Longer than 500 lines:``."""
    unexplained = []
    for path in sorted((ROOT / "ledger").rglob("*.py")):
        name, source = path.relative_to(ROOT).as_posix(), path.read_text()
        lines = len(source.splitlines())
        if lines <= LONG_MODULE_LINES:
            continue
        docstring = ast.get_docstring(ast.parse(source)) or ""
        if not any(line.startswith(LONG_MODULE_REASON) for line in docstring.splitlines()):
            unexplained.append(f"{name}: {lines} lines")
    assert unexplained == []


# What builds or runs a statement: the storage room's business, and the read models' (ledger/read).
STATEMENT_BUILDERS = {"select", "insert", "update", "delete", "text", "bindparam", "func", "and_", "or_", "literal_column", "table", "column"}
STATEMENT_RUNNERS = {"execute", "exec_driver_sql", "connection"}


def test_the_service_room_writes_no_sql():
    """ledger/service composes storage calls: none of its modules builds a statement, runs one or reaches for a connection."""
    found = []
    for path in sorted((ROOT / "ledger" / "service").rglob("*.py")):
        name = path.relative_to(ROOT).as_posix()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found += [f"{name}:{node.lineno} imports {alias.name}" for alias in node.names if alias.name.split(".")[0] == "sqlalchemy"]
            elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "sqlalchemy":
                found += [f"{name}:{node.lineno} imports {alias.name}" for alias in node.names if alias.name in STATEMENT_BUILDERS]
            elif isinstance(node, ast.Attribute) and node.attr in STATEMENT_RUNNERS:
                found.append(f"{name}:{node.lineno} uses .{node.attr}")
    assert found == []


def test_every_review_module_is_held_to_the_review_protocol():
    """The type checker holds each reducer to ReviewModule through a tuple it can follow (REVIEW_MODULES
    names them as strings); a review added to one and not the other would go unchecked."""
    import ast

    from benchledger.projections import REVIEW_MODULES

    tree = ast.parse((ROOT / "projections" / "__init__.py").read_text())
    (checked,) = [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == "REVIEWS"
    ]
    assert isinstance(checked, ast.Tuple)
    assert sorted(element.id for element in checked.elts if isinstance(element, ast.Name)) == sorted(REVIEW_MODULES.values())
