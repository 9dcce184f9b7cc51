"""LoopX is found through BENCHLEDGER_LOOPX, else on PATH, never at an assumed path; and only LoopX 0.4.8 is taken."""

from __future__ import annotations

import pytest

from tests.loopx import ENV, loopx_executable


def fake_loopx(folder, version: str) -> str:
    folder.mkdir()
    script = folder / "loopx"
    script.write_text(f"#!/bin/sh\necho 'loopx {version}'\n")
    script.chmod(0o755)
    return str(script)


def test_without_the_variable_and_without_loopx_on_path_there_is_none(monkeypatch, tmp_path):
    monkeypatch.delenv(ENV, raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert loopx_executable() is None


def test_the_variable_comes_before_path(monkeypatch, tmp_path):
    on_path = fake_loopx(tmp_path / "bin", "0.4.8")
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    monkeypatch.delenv(ENV, raising=False)
    assert loopx_executable() == on_path
    named = fake_loopx(tmp_path / "named", "0.4.8")
    monkeypatch.setenv(ENV, named)
    assert loopx_executable() == named


@pytest.mark.parametrize("version", ["2.1.1", None])
def test_a_named_loopx_that_is_another_version_or_missing_is_an_error(monkeypatch, tmp_path, version):
    named = fake_loopx(tmp_path / "named", version) if version else str(tmp_path / "absent" / "loopx")
    monkeypatch.setenv(ENV, named)
    with pytest.raises(RuntimeError, match=ENV):
        loopx_executable()
