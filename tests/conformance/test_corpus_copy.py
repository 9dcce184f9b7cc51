"""The corpus under tests/ must stay a byte-identical copy of ../shared/conformance."""

from __future__ import annotations

import filecmp
from pathlib import Path

import pytest

from tests.conformance.cases import CORPUS, load_cases

SHARED = Path(__file__).resolve().parents[3] / "shared" / "conformance"


def test_corpus_is_present():
    assert len(load_cases()) > 400


@pytest.mark.skipif(not SHARED.is_dir(), reason="no ../shared/conformance beside this checkout to compare with")
def test_corpus_matches_shared_copy():
    mismatches = []

    def walk(cmp: filecmp.dircmp) -> None:
        mismatches.extend(cmp.left_only + cmp.right_only + cmp.diff_files + cmp.funny_files)
        for sub in cmp.subdirs.values():
            walk(sub)

    walk(filecmp.dircmp(SHARED, CORPUS))
    assert mismatches == [], "tests/conformance/corpus drifted from ../shared/conformance"
