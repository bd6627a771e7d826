"""scripts/update_readme.py: the generated docs blocks, here the with/without-tools table."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
from update_readme import replace_block, tool_gap_table  # noqa: E402


def summary(**acc: float) -> dict:
    return {"by_family": {fam: {"level": "L1", "scored": 10, "metrics": {"acc": a}}
                          for fam, a in acc.items()}}


def write(path: Path, doc: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))


def audit_row(family: str, level: str, kind: str | None, no: float | None, with_: float | None,
              chance: float | None, share: float, failures: list[str]) -> dict:
    return {"level": level, "family": family, "scene": "flat", "tasks": 6, "share": share,
            "shares": [share], "reader_kind": kind, "no_tool": no, "with_tool": with_,
            "chance": chance, "ops": [], "failures": failures, "known": None,
            "reader_note": ""}


def test_tool_gap_table_joins_the_reader_and_both_heuristic_runs(tmp_path: Path) -> None:
    write(tmp_path / "audit.json", {"reader": "best", "tasks": 6, "photo": False, "rows": [
        audit_row("tiny_text", "L1", "answer", 0.2, 0.9, 1 / 6, 0.75, []),
        audit_row("code_lookup", "L3", "key", 0.0, 1.0, None, 0.5, []),
        audit_row("glyph_zoom", "Classic", None, None, None, None, 0.58, ["x not needed"]),
    ]})
    write(tmp_path / "heuristic" / "summary.json", summary(tiny_text=0.75, code_lookup=0.5))
    write(tmp_path / "heuristic-classic" / "summary.json", summary(glyph_zoom=1.0))
    write(tmp_path / "heuristic-notools" / "summary.json", summary(tiny_text=0.05,
                                                                   code_lookup=0.0))
    write(tmp_path / "heuristic-notools-classic" / "summary.json", summary(glyph_zoom=0.1))
    lines = tool_gap_table(tmp_path).splitlines()
    assert lines[0].startswith("| level | family | reader, no tool | reader, with tool |")
    assert lines[2] == ("| L1 | tiny_text | 0.20 | 0.90 | 0.17 | 0.75 (n=10) | 0.05 | +0.70 "
                        "| 0.750 | pass |")
    assert lines[3] == ("| L3 | code_lookup | 0.00 (key) | 1.00 (key) | – | 0.50 (n=10) | 0.00 "
                        "| +0.50 | 0.500 | pass |")
    # the classic runs are merged in; a run folder of another name is not
    assert lines[4] == ("| Classic | glyph_zoom | – | – | – | 1.00 (n=10) | 0.10 | +0.90 "
                        "| 0.580 | FAIL: x not needed |")


def test_tool_gap_table_without_runs_is_none_and_missing_families_are_dashes(
        tmp_path: Path) -> None:
    assert tool_gap_table(tmp_path) is None
    write(tmp_path / "audit.json", {"reader": "none", "tasks": 1, "photo": False, "rows": [
        audit_row("tiny_text", "L1", None, None, None, None, 0.75, [])]})
    write(tmp_path / "heuristic-old" / "summary.json", summary(tiny_text=1.0))
    (line,) = tool_gap_table(tmp_path).splitlines()[2:]
    assert line == "| L1 | tiny_text | – | – | – | – | – | – | 0.750 | pass |"


@pytest.mark.parametrize("text", ["a\n<!-- T -->\nb", "a\n<!-- T -->\nold\n<!-- /T -->\nb"])
def test_replace_block_creates_or_replaces(text: str) -> None:
    assert replace_block(text, "T", "new") == "a\n<!-- T -->\nnew\n<!-- /T -->\nb"
