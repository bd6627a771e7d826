"""Records' ``knowledge`` entries: an overlay world that the retrieval tools search and fetch."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import cv2
import gymnasium as gym
import numpy as np
import pytest

from m3gym.env import LazyWorld, task_world
from m3gym.records import RecordsError, load_records
from m3gym.records_env import RECORDS_ENV_ID
from m3gym.tasks.registry import make_task
from m3gym.web import build_world
from m3gym.web.overlay import OverlayWorld, knowledge_pages, knowledge_url

FONT = cv2.FONT_HERSHEY_SIMPLEX
GAUGE_TEXT = ("The Velmora tide gauge stands on the north pier. It was installed in 1931 by the "
              "harbour board. Its record reading is 4.27 metres.")
BEACON = {"title": "Quorrel beacon", "url": "https://beacons.example/quorrel",
          "text": "The Quorrel beacon flashes every 7 seconds. It was lit in 1884."}


def plaque_image(path: Path) -> list[int]:
    """Write a 1600x1200 photo with a small plaque reading ``VELMORA``; return the plaque box."""
    rng = np.random.default_rng(5)
    img = np.full((1200, 1600, 3), 215, np.uint8)
    for _ in range(10):
        x, y = int(rng.integers(0, 1400)), int(rng.integers(0, 1000))
        cv2.rectangle(img, (x, y), (x + 150, y + 90),
                      tuple(int(v) for v in rng.integers(60, 200, 3)), -1)
    (tw, th), base = cv2.getTextSize("VELMORA", FONT, 0.45, 1)
    x, y = 820, 610
    cv2.rectangle(img, (x, y), (x + tw + 4, y + th + base + 4), (250, 250, 250), -1)
    cv2.putText(img, "VELMORA", (x + 2, y + th + 2), FONT, 0.45, (0, 0, 0), 1, cv2.LINE_AA)
    cv2.imwrite(str(path), img)
    return [x, y, x + tw + 4, y + th + base + 4]


def knowledge_record(tmp: Path, rid: str = "k1", **over: Any) -> dict[str, Any]:
    """A record whose answer (1931) is on the page of the gauge the plaque names."""
    box = plaque_image(tmp / f"{rid}.png")
    rec = {"id": rid, "images": [f"{rid}.png"],
           "question": "The plaque names a tide gauge. In which year was it installed?",
           "answer": {"value": "1931", "match": "number"},
           "evidence": [{"box": box, "text": "VELMORA"}],
           "knowledge": [{"title": "Velmora tide gauge", "text": GAUGE_TEXT}]}
    rec.update(over)
    return rec


@pytest.fixture
def records_file(tmp_path: Path) -> Path:
    """Two knowledge records: one entry without a url, and two entries (one with a url)."""
    recs = [knowledge_record(tmp_path),
            knowledge_record(tmp_path, "k2", knowledge=[
                {"title": "Velmora tide gauge", "text": GAUGE_TEXT}, BEACON])]
    path = tmp_path / "records.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    return path


def env_for(path: Path, record_id: str = "k1") -> Any:
    """Return an env reset on the episode of ``record_id`` (split "all": seed = record index)."""
    env = gym.make(RECORDS_ENV_ID, records=str(path), split="all", disable_env_checker=True)
    for seed in range(4):
        env.reset(seed=seed)
        if env.unwrapped.task.metadata["record_id"] == record_id:
            return env
    raise AssertionError(f"no seed gives record {record_id}")


# ---------------------------------------------------------------------------------------------
# the overlay world


def test_knowledge_url_is_a_stable_sha256_of_id_and_index():
    assert knowledge_url("r1", 0) == "https://knowledge.m3gym.invalid/70951deba8c50126"
    assert knowledge_url("r1", 1) != knowledge_url("r1", 0) != knowledge_url("r2", 0)
    pages = knowledge_pages([{"title": "A b", "text": "x"}, {**BEACON}], "r1")
    assert [p.url for p in pages] == [knowledge_url("r1", 0), BEACON["url"]]
    with pytest.raises(ValueError, match=r"knowledge\[1\].url .* is also knowledge\[0\]'s"):
        knowledge_pages([BEACON, {**BEACON, "url": "http://www.beacons.example/Quorrel/"}])


def test_overlay_ranks_entries_with_the_worlds_pages_exactly():
    world = build_world(0, "train")
    pages = knowledge_pages([{"title": "Velmora tide gauge", "text": GAUGE_TEXT},
                             {"title": "Tide Ridge harbour", "text": "Tide Ridge has a harbour."}],
                            "hand")
    overlay = OverlayWorld(world, pages)
    # the record's page is found by its title words, and first
    hits = overlay.search("Velmora tide gauge", 5)
    assert [h.url for h in hits[:2]] == [pages[0].url, pages[1].url]
    assert hits[0].entity == "knowledge/0" and hits[0].snippet.startswith("The Velmora tide gauge")
    # a world page stays first for its own query: the entry mentioning the name does not drown it
    base = [h.url for h in world.search("Tide Ridge town", 5)]
    mixed = [h.url for h in overlay.search("Tide Ridge town", 5)]
    assert mixed[0] == base[0] == "https://wiki.m3gym.test/tide-ridge"
    assert mixed.index(pages[1].url) == 1  # ... and the entry is not drowned either
    # a query sharing no word with the entries ranks the world's pages as the world does
    q = world.good_query(world.entities[0])
    assert [h.url for h in overlay.search(q, 5)] == [h.url for h in world.search(q, 5)]
    assert overlay.search("the of and", 5) == []


def test_overlay_serves_pages_and_delegates_the_rest():
    world = build_world(0, "train")
    shadow = {"title": "Local notes", "text": "Private notes.", "url": world.pages[0].url}
    pages = knowledge_pages([{"title": "Velmora tide gauge", "text": GAUGE_TEXT}, shadow], "r")
    overlay = OverlayWorld(LazyWorld(0, "train"), pages)
    page = overlay.page(pages[0].url.upper() + "/")
    assert page is pages[0]
    assert page.text() == ("Velmora tide gauge\nhttps://knowledge.m3gym.invalid/"
                           f"{pages[0].url.rsplit('/', 1)[1]}\n\n{GAUGE_TEXT}")
    assert overlay.page(world.pages[0].url) is pages[1]  # an entry shadows the world's page
    assert world.pages[0].url not in [h.url for h in overlay.search(world.pages[0].title, 10)]
    assert overlay.page(world.pages[1].url) is world.pages[1]
    assert overlay.entity_by_url(world.entities[2].url) is world.entities[2]
    logo = world.logo(world.entities[2])
    assert overlay.image_search(logo, 1)[0].url == world.image_search(logo, 1)[0].url


# ---------------------------------------------------------------------------------------------
# record -> task, the env and the oracle


def test_record_task_has_search_and_fetch_reference_and_checkpoints(records_file):
    records = load_records(records_file)
    task = records.task("k1")
    url = knowledge_url("k1", 0)
    assert [[c.name for c in s] for s in task.reference] == [["crop", "web_search"],
                                                             ["fetch_webpage"]]
    search, fetch = task.reference[0][1], task.reference[1][0]
    assert search.arguments == {"query": "Velmora tide gauge", "top_k": 5}
    assert not search.depends_on and fetch.depends_on == (search.id,)
    assert fetch.arguments == {"url": url}
    kinds = [(c.id, c.kind, c.axis) for c in task.checkpoints]
    assert kinds[-2:] == [("s_search_w1", "search_hit", "S"), ("s_fetch_u1", "fetch", "S")]
    assert task.checkpoints[-2].params == {"tool": "web_search", "url": url, "max_rank": 3}
    assert task.metadata["knowledge"] == [{"title": "Velmora tide gauge", "text": GAUGE_TEXT,
                                           "url": url}]
    assert task.level == 3 and "knowledge" in task.capabilities
    two = records.task("k2")
    assert [[c.name for c in s] for s in two.reference] == [
        ["crop", "web_search", "web_search"], ["fetch_webpage", "fetch_webpage"]]
    assert two.reference[1][1].arguments == {"url": BEACON["url"]}


def test_env_search_finds_the_entry_and_fetch_returns_its_text(records_file):
    env = env_for(records_file)
    task = env.unwrapped.task
    url = knowledge_url("k1", 0)
    env.step({"name": "web_search",
                                 "arguments": {"query": "Velmora tide gauge installed"}})
    payload = env.unwrapped.trace.steps[-1][0].payload
    assert [r["url"] for r in payload["results"]][0] == url
    env.step({"name": "fetch_webpage", "arguments": {"url": url}})
    rec = env.unwrapped.trace.steps[-1][0]
    assert rec.ok and rec.payload == {"url": url, "title": "Velmora tide gauge"}
    assert GAUGE_TEXT in rec.result_text
    assert task.metadata["record_id"] == "k1"
    env.close()


def _run(env: Any, skip: str | None = None) -> dict[str, Any]:
    task = env.unwrapped.task
    for step in task.reference:
        calls = [{"name": c.name, "arguments": dict(c.arguments)} for c in step
                 if c.name != skip]
        env.step(calls)
    _, _, terminated, _, final = env.step({"name": "answer",
                                          "arguments": {"answer": task.answer.value}})
    assert terminated
    return final


def test_oracle_scores_one_and_skipping_the_search_fails_its_checkpoint(records_file):
    for rid in ("k1", "k2"):
        env = env_for(records_file, rid)
        final = _run(env)
        assert final["answer_correct"], rid
        assert (final["metrics"]["S"], final["metrics"]["V"]) == (1.0, 1.0), rid
        env.close()
    env = env_for(records_file, "k1")
    final = _run(env, skip="web_search")
    assert final["answer_correct"]
    assert (final["metrics"]["S"], final["metrics"]["V"]) == (pytest.approx(2 / 3), 1.0)
    env.close()


def test_procedural_tasks_keep_the_plain_world():
    task = make_task("cross_image", 0)
    world = task_world(task)
    assert type(world) is LazyWorld and "knowledge" not in task.metadata
    query = next(c for s in task.reference for c in s if c.name == "web_search").arguments["query"]
    base = build_world(0, "train")
    assert world.search(query, 5) == base.search(query, 5)
    assert world.search(query, 5)[0].url == "https://wiki.m3gym.test/vamur-tower"


def test_two_envs_and_two_processes_rank_the_same(records_file):
    envs = [env_for(records_file, "k2") for _ in range(2)]
    payloads = []
    for env in envs:
        env.step({"name": "web_search", "arguments": {"query": "beacon tide gauge", "top_k": 10}})
        payloads.append(env.unwrapped.trace.steps[-1][0].payload)
        env.close()
    assert payloads[0] == payloads[1]
    assert [r["url"] for r in payloads[0]["results"]][:2] == [knowledge_url("k2", 0),
                                                              BEACON["url"]]
    code = ("from m3gym.web import build_world\n"
            "from m3gym.web.overlay import OverlayWorld, knowledge_pages\n"
            f"p = knowledge_pages([{{'title': 'Velmora tide gauge', 'text': {GAUGE_TEXT!r}}},"
            f" {BEACON!r}], 'k2')\n"
            "print([(h.url, h.score) for h in OverlayWorld(build_world(0, 'train'), p)"
            ".search('beacon tide gauge', 10)])\n")
    outs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True, env={"PYTHONHASHSEED": seed, "PATH": ""}).stdout
            for seed in ("1", "2")}
    assert len(outs) == 1
    world = OverlayWorld(build_world(0, "train"), knowledge_pages(
        [{"title": "Velmora tide gauge", "text": GAUGE_TEXT}, BEACON], "k2"))
    assert outs.pop().strip() == str([(h.url, h.score)
                                      for h in world.search("beacon tide gauge", 10)])


def test_repeated_knowledge_urls_are_rejected(tmp_path):
    rec = knowledge_record(tmp_path, knowledge=[BEACON, {**BEACON, "title": "Other"}])
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(rec) + "\n")
    with pytest.raises(RecordsError, match=r"knowledge\[1\].url repeats knowledge\[0\].url"):
        load_records(path)


def test_an_entry_no_search_can_rank_is_refused_with_the_reason(tmp_path):
    same = [{"title": "Velmora tide gauge", "text": GAUGE_TEXT, "url": f"https://x.example/{i}"}
            for i in range(4)]
    path = tmp_path / "same.jsonl"
    path.write_text(json.dumps(knowledge_record(tmp_path, knowledge=same)) + "\n")
    records = load_records(path)
    with pytest.raises(ValueError, match=r"knowledge\[3\] \('Velmora tide gauge'\) does not rank "
                                         r"within the top 3 results"):
        records.task("k1")
