"""docs/python-api.md: its examples run, in order, as the one script the page says they are."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "python-api.md"


def python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```$", text, flags=re.DOTALL | re.MULTILINE)


def test_the_python_api_page_runs(tmp_path, monkeypatch):
    blocks = python_blocks(PAGE.read_text(encoding="utf-8"))
    assert len(blocks) >= 6
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("BENCHLEDGER_DATABASE_URL", raising=False)
    monkeypatch.setenv("BENCHLEDGER_HOME", str(tmp_path / "home"))
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile("\n".join(blocks), str(PAGE), "exec"), {"__name__": "python_api_docs"})
    lines = printed.getvalue().splitlines()
    # What the page's comments say the examples print.
    assert lines[0] == "sqlite 0007"
    assert "3" in lines and "6 0" in lines and "True 1" in lines
    assert lines[-1].startswith("no goal 'no-such-goal' in this ledger") and lines[-1].endswith(" 2")
