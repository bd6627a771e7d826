"""The bundled ``M3Bench-Records`` demo set: valid, licensed, reproducible, needs the tools."""

from __future__ import annotations

import collections
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

import m3gym  # noqa: F401  (registers the env ids)
from m3gym.agents.base import OracleAgent
from m3gym.eval.episode_loop import record_episode
from m3gym.records import check_records, load_records
from m3gym.records.family import DEMO_RECORDS

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "m3gym" / "data" / "records_demo"
SIZE_BUDGET = 5 * 1024 * 1024


def _build_module() -> Any:
    spec = importlib.util.spec_from_file_location("build_records_demo",
                                                  ROOT / "scripts" / "build_records_demo.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # its dataclasses look their module up
    try:
        spec.loader.exec_module(mod)
    finally:
        del sys.modules[spec.name]
    return mod


@pytest.fixture(scope="module")
def records() -> Any:
    return load_records(DEMO / "records.jsonl")


@pytest.fixture(scope="module")
def env() -> Any:
    e = gym.make("M3Bench-Records-v4").unwrapped
    yield e
    e.close()


def test_default_path_is_the_demo_set() -> None:
    assert DEMO_RECORDS == DEMO / "records.jsonl"


def test_every_record_valid_and_needs_a_tool(records: Any) -> None:
    validation, _name, _sha = check_records(DEMO / "records.jsonl")
    assert validation.problems == []
    assert validation.warnings == []
    assert len(validation.records) == 22
    assert len(records) == 22
    assert tuple(records.warnings) == ()
    raw = [json.loads(line) for line in (DEMO / "records.jsonl").read_text().splitlines()]
    assert len({r["id"] for r in raw}) == 22
    ops = collections.Counter(ev.get("op", {}).get("op", "none")
                              for r in raw for ev in r["evidence"])
    assert ops == {"none": 8, "rotate": 4, "flip": 3, "enhance": 7}
    matches = collections.Counter(r["answer"]["match"] for r in raw)
    assert matches == {"choice": 13, "exact": 4, "number": 5}
    for r in raw:
        if "choices" in r:
            assert len(r["choices"]) == 4 and r["answer"]["value"] in r["choices"]


def test_licences_cover_every_image() -> None:
    text = (DEMO / "LICENSES.md").read_text(encoding="utf-8")
    files = sorted(p for sub in ("images", "sources") for p in (DEMO / sub).iterdir())
    assert len(files) == 10
    for path in files:
        assert f"`{path.name}`" in text, f"{path.name} is missing from LICENSES.md"
    raw = [json.loads(line) for line in (DEMO / "records.jsonl").read_text().splitlines()]
    assert {Path(p).name for r in raw for p in r["images"]} == {
        "board_a.jpg", "board_b.jpg", "board_c.jpg"}


def test_total_size_within_budget() -> None:
    total = sum(p.stat().st_size for p in DEMO.rglob("*") if p.is_file())
    assert total <= SIZE_BUDGET, f"{total} bytes > {SIZE_BUDGET}"


def test_build_script_reproduces_committed_bytes(tmp_path: Path) -> None:
    written = _build_module().build(tmp_path)
    assert sorted(p.relative_to(tmp_path).as_posix() for p in written) == [
        "images/board_a.jpg", "images/board_b.jpg", "images/board_c.jpg", "records.jsonl"]
    for path in written:
        rel = path.relative_to(tmp_path)
        assert path.read_bytes() == (DEMO / rel).read_bytes(), f"{rel} differs from the build"


def test_docs_gallery_images_reproduce(tmp_path: Path) -> None:
    written = _build_module().build_docs(tmp_path)
    assert [p.name for p in written] == ["tag-text-view.jpg", "tag-text-crop.png"]
    for path in written:
        assert path.read_bytes() == (ROOT / "docs" / "images" / "records" / path.name).read_bytes()


def test_oracle_scores_one_on_every_record(records: Any, env: Any) -> None:
    for record in records:
        rec = record_episode(env, OracleAgent(), options={"task": records.task(record)},
                          catch=False)
        m = rec.final.get("metrics") or {}
        got = {k: m.get(k) for k in ("acc", "S", "V", "OT")}
        assert got == {"acc": 1.0, "S": 1.0, "V": 1.0, "OT": 0.0}, record.id


class _BlindAgent:
    """Answer at once, without a tool: the first choice, else the set's most common answer."""

    def __init__(self, fallback: str) -> None:
        self.fallback = fallback
        self.choices: tuple[str, ...] = ()

    def reset(self, observation: dict[str, Any], info: dict[str, Any]) -> None:
        self.choices = tuple(info.get("choices") or ())

    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> Any:
        text = self.choices[0] if self.choices else self.fallback
        return {"name": "answer", "arguments": {"text": text}}


def test_blind_answers_score_near_chance(records: Any, env: Any) -> None:
    raw = [json.loads(line) for line in (DEMO / "records.jsonl").read_text().splitlines()]
    common = collections.Counter(str(r["answer"]["value"]) for r in raw
                                 if "choices" not in r).most_common(1)[0][0]
    assert common == "3"
    correct = 0
    for record in records:
        rec = record_episode(env, _BlindAgent(common), options={"task": records.task(record)})
        m = rec.final.get("metrics") or {}
        correct += m.get("acc") == 1.0
        assert m.get("V") == 0.0, record.id
    # the first choice is right once in 13, the most common open answer ("3") twice in 9
    assert correct == 3
    assert correct / len(records) < 0.25
