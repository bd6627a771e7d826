"""scripts/difficulty_curves.py: the table layout by hand, and a tiny run on the example family."""

from __future__ import annotations

import csv
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))

from difficulty_curves import DOCS_MARKERS, DOCS_PAGE, main, markdown_table, replace_block  # noqa: E402

from m3gym.testing import registered  # noqa: E402


def test_markdown_table_by_hand() -> None:
    rows = [{"family": "a", "level": 1, "difficulty": d, "episodes": 4, "accuracy": acc}
            for d, acc in ((0.0, 1.0), (1.0, 0.25))]
    assert markdown_table(rows, {"a": 1 / 6}, ["b"]) == (
        "| family | level | d=0 | d=1 | chance | episodes |\n"
        "|---|---|---|---|---|---|\n"
        "| a | 1 | 1.00 | 0.25 | 0.17 | 4 |\n"
        "\n"
        "No difficulty knobs yet (skipped): b.\n")


def test_markdown_without_rows_names_the_skipped() -> None:
    assert markdown_table([], {}, ["a", "b"]) == \
        "No family declares difficulty knobs yet (skipped: a, b).\n"


def test_run_on_the_example_family(tmp_path: Path) -> None:
    from examples.example_family import SerialPlateFamily

    with registered(SerialPlateFamily):
        assert main(["--episodes", "1", "--family", "serial_plate",
                     "--out-dir", str(tmp_path)]) == 0
    with open(tmp_path / "difficulty_curves.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert [float(r["difficulty"]) for r in rows] == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert all(r["family"] == "serial_plate" and r["accuracy"] in ("0.0", "1.0") for r in rows)
    assert (tmp_path / "difficulty_curves.md").read_text().startswith("| family | level |")


def test_cache_resumes_family_by_family(tmp_path: Path) -> None:
    import json

    from examples.example_family import SerialPlateFamily

    cache = tmp_path / "cache"
    cache.mkdir()
    fake = [{"family": "serial_plate", "level": 1, "suite": "m3bench", "difficulty": d,
             "episodes": 1, "accuracy": 0.5} for d in (0.0, 0.25, 0.5, 0.75, 1.0)]
    (cache / "serial_plate.json").write_text(json.dumps(fake))
    with registered(SerialPlateFamily):  # the cached rows are used, not recomputed
        assert main(["--episodes", "1", "--family", "serial_plate", "--out-dir",
                     str(tmp_path), "--cache", str(cache)]) == 0
        with open(tmp_path / "difficulty_curves.csv") as fh:
            assert {r["accuracy"] for r in csv.DictReader(fh)} == {"0.5"}
        # another episode count does not match the cache: computed afresh and saved
        assert main(["--episodes", "2", "--family", "serial_plate", "--out-dir",
                     str(tmp_path), "--cache", str(cache)]) == 0
    saved = json.loads((cache / "serial_plate.json").read_text())
    assert all(r["episodes"] == 2 and r["accuracy"] in (0.0, 0.5, 1.0) for r in saved)


def test_docs_block_is_replaced() -> None:
    start, end = DOCS_MARKERS
    text = f"intro\n{start}\nold\n{end}\nrest\n"
    assert replace_block(text, "| t |\n") == f"intro\n{start}\n| t |\n{end}\nrest\n"
    page = DOCS_PAGE.read_text()
    assert page.count(start) == 1 and page.count(end) == 1
    assert DOCS_PAGE == Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"
