"""m3gym.curriculum: determinism, state round-trip, where it moves mass, env integration."""

from __future__ import annotations

import importlib
import json

import gymnasium as gym
import numpy as np
import pytest

from m3gym.curriculum import Curriculum, make_curriculum
from m3gym.env import M3BenchEnv
from m3gym.testing import registered
from m3gym.wrappers import make_discrete_env

FAMILIES = ("tiny_text", "faint_text")


@pytest.fixture(autouse=True)
def no_registry_leak():
    """No test of this module leaves a family registered (level envs draw from the registry)."""
    from m3gym.tasks.registry import family_names

    before = family_names(suite=None)
    yield
    assert family_names(suite=None) == before


def scripted_success(family: str, difficulty: float) -> bool:
    """A fixed outcome stream: easy tasks succeed, hard ones fail (family-dependent cut)."""
    return difficulty < (0.5 if family == "tiny_text" else 0.3)


def run(cur: Curriculum, n: int, rng: np.random.Generator | None = None) -> list[tuple[str, float]]:
    out = []
    for _ in range(n):
        family, d = cur.sample(rng)
        cur.update(family, d, scripted_success(family, d))
        out.append((family, d))
    return out


def test_same_seed_and_outcomes_same_samples() -> None:
    a, b = Curriculum(FAMILIES, seed=3), Curriculum(FAMILIES, seed=3)
    assert run(a, 80) == run(b, 80)
    assert run(Curriculum(FAMILIES), 40, np.random.default_rng(5)) == \
        run(Curriculum(FAMILIES), 40, np.random.default_rng(5))
    assert run(Curriculum(FAMILIES, seed=4), 40) != run(Curriculum(FAMILIES, seed=3), 40)


@pytest.mark.parametrize("mode", ["progress", "band"])
def test_state_round_trips_through_json(mode: str, tmp_path) -> None:
    cur = Curriculum(FAMILIES, mode=mode, bins=4, seed=1)
    run(cur, 50)
    state = json.loads(json.dumps(cur.state_dict()))
    copy = Curriculum.from_state_dict(state)
    assert copy.state_dict() == cur.state_dict()
    np.testing.assert_array_equal(copy.probabilities(), cur.probabilities())
    assert run(copy, 30) == run(cur, 30)  # continues identically (own generator restored)
    cur.save(tmp_path / "cur.json")
    assert Curriculum.load(tmp_path / "cur.json").state_dict() == cur.state_dict()
    assert make_curriculum(tmp_path / "cur.json", ["x"]).state_dict() == cur.state_dict()
    with pytest.raises(ValueError, match="families"):
        Curriculum(("tiny_text",), bins=4).load_state_dict(state)


def test_band_mode_moves_mass_into_the_band() -> None:
    """Bins 0-1 always solved, 3-4 never, bin 2 half the time: only bin 2 stays in the band."""
    cur = Curriculum(["tiny_text"], bins=5, mode="band", band=(0.3, 0.7), outside=0.05,
                     epsilon=0.1, seed=0)
    assert cur.probabilities() == pytest.approx([0.2] * 5)  # untried arms score 1
    visits = {b: 0 for b in range(5)}
    for _ in range(400):
        _, d = cur.sample()
        b = cur.bin_of(d)
        visits[b] += 1
        cur.update("tiny_text", d, b < 2 or (b == 2 and visits[b] % 2 == 0))
    # in band: (1 - eps) * 1 / (1 + 4 * 0.05) + eps / 5; outside: (1 - eps) * 0.05 / 1.2 + eps / 5
    assert cur.probabilities() == pytest.approx([0.0575, 0.0575, 0.77, 0.0575, 0.0575])
    assert visits[2] > 0.6 * 400


def test_progress_mode_prefers_the_arm_being_learned() -> None:
    cur = Curriculum(["tiny_text"], bins=3, mode="progress", fast=0.2, slow=0.02, epsilon=0.0)
    for _ in range(200):
        cur.update("tiny_text", 0.1, True)    # bin 0: mastered
        cur.update("tiny_text", 0.9, False)   # bin 2: hopeless
    for _ in range(10):
        cur.update("tiny_text", 0.5, True)    # bin 1: being learned
    mastered = (1 - 0.98**200) - (1 - 0.8**200)
    learning = (1 - 0.8**10) - (1 - 0.98**10)
    expected = np.array([abs(mastered), learning, 0.0]) / (abs(mastered) + learning)
    np.testing.assert_allclose(cur.probabilities(), expected, rtol=1e-12)
    assert cur.probabilities()[1] > 0.95


def test_sampled_difficulty_lies_in_its_bin_and_updates_its_arm() -> None:
    cur = Curriculum(["tiny_text"], bins=4, seed=2)
    for _ in range(50):
        family, d = cur.sample()
        assert family == "tiny_text" and 0.0 <= d <= 1.0
    assert [cur.bin_of(d) for d in (0.0, 0.249, 0.25, 0.99, 1.0)] == [0, 0, 1, 3, 3]
    cur.update("tiny_text", 1.0, True)
    assert cur.stats[("tiny_text", 3)].count == 1 and cur.stats[("tiny_text", 3)].fast == 0.2


@pytest.mark.parametrize("bad", [
    {"families": ()}, {"families": ("tiny_text", "tiny_text")}, {"bins": 0}, {"mode": "greedy"},
    {"band": (0.8, 0.2)}, {"fast": 0.01, "slow": 0.02}, {"epsilon": 1.5}, {"outside": -0.1},
])
def test_bad_configs_are_refused(bad: dict) -> None:
    with pytest.raises(ValueError):
        Curriculum(**{"families": FAMILIES, **bad})


def test_bad_updates_are_refused() -> None:
    cur = Curriculum(FAMILIES)
    with pytest.raises(KeyError, match="not in this curriculum"):
        cur.update("price_sum", 0.5, True)
    with pytest.raises(ValueError, match="difficulty"):
        cur.update("tiny_text", 1.5, True)
    with pytest.raises(ValueError, match="success"):
        cur.update("tiny_text", 0.5, 2.0)
    with pytest.raises(KeyError, match="unknown task family"):
        Curriculum(["no_such_family"])


# ------------------------------------------------------------------------------ env


@pytest.fixture(scope="module")
def example():
    """The example family (it has knobs) and the toy without knobs, registered for this module."""
    toys = importlib.import_module("tests.toy_families")
    with registered(*toys.ALL):
        yield toys.SerialPlateFamily


@pytest.fixture(scope="module")
def serial_plate_env_id(example):
    """A gym id for the example family, registered for this module and removed after it."""
    env_id = "M3Bench-TestSerialPlate"
    gym.register(env_id, entry_point="m3gym.env:M3BenchEnv", kwargs={"family": "serial_plate"})
    try:
        yield env_id
    finally:
        del gym.registry[env_id]


def test_env_difficulty_sets_the_knobs(example) -> None:
    glyphs = {}
    for d in (None, 0.0, 1.0):
        env = M3BenchEnv(family="serial_plate", difficulty=d)
        _, info = env.reset(seed=4)
        assert info["difficulty"] == d
        glyphs[d] = env.task.evidence[0].glyph_height
    # the example's knobs: glyph_range (7.5, 8.5) at 0, (5.0, 6.0) at 1, default (6.0, 8.0)
    assert 5.0 <= glyphs[1.0] <= 6.0 and 7.5 <= glyphs[0.0] <= 8.5 and 6.0 <= glyphs[None] <= 8.0
    with pytest.raises(ValueError, match="difficulty must lie in"):
        M3BenchEnv(family="serial_plate", difficulty=1.2)
    with pytest.raises(ValueError, match="declare none: toy_no_knobs"):
        M3BenchEnv(family="toy_no_knobs", difficulty=0.5)


def test_gym_make_passes_difficulty_and_curriculum(serial_plate_env_id) -> None:
    env_id = serial_plate_env_id
    env = gym.make(env_id, difficulty=0.3)
    assert env.reset(seed=0)[1]["difficulty"] == 0.3
    env = gym.make(env_id, curriculum={"bins": 2, "seed": 0})
    _, info = env.reset(seed=0)
    assert info["family"] == "serial_plate" and 0.0 <= info["difficulty"] <= 1.0


def _episode(env: gym.Env, seed: int, answer: str | None = None) -> dict:
    _, info = env.reset(seed=seed)
    text = answer if answer is not None else env.unwrapped.task.answer.value
    return env.step({"name": "answer", "arguments": {"text": text}})[4]


def test_env_feeds_outcomes_to_its_curriculum(example) -> None:
    env = M3BenchEnv(family="serial_plate", curriculum={"bins": 2, "seed": 0})
    cur = env.curriculum
    final = _episode(env, 0)
    assert final["family"] == "serial_plate" and final["answer_correct"]
    arm = ("serial_plate", cur.bin_of(final["difficulty"]))
    assert cur.stats[arm].count == 1 and cur.stats[arm].successes == 1
    wrong = _episode(env, 1, answer="nope")
    assert not wrong["answer_correct"]
    assert sum(s.count for s in cur.stats.values()) == 2
    # the learner owns the curriculum: the env only samples, then takes the pushed state
    passive = M3BenchEnv(family="serial_plate", curriculum={"bins": 2}, curriculum_update=False)
    _episode(passive, 0)
    assert all(s.count == 0 for s in passive.curriculum.stats.values())
    passive.set_curriculum_state(env.curriculum_state())
    assert passive.curriculum_state()["arms"] == env.curriculum_state()["arms"]


def test_env_curriculum_draws_are_reproducible(example) -> None:
    def draws() -> list[tuple[str, float]]:
        env = M3BenchEnv(family="serial_plate", curriculum={"bins": 3, "seed": 0})
        out = []
        for seed in range(4):
            final = _episode(env, seed, answer="nope" if seed % 2 else None)
            out.append((final["family"], final["difficulty"]))
        return out

    assert draws() == draws()


def test_discrete_wrapper_passes_difficulty_and_curriculum(example) -> None:
    env = make_discrete_env(family="serial_plate", difficulty=0.5, task_pool=3)
    assert env.reset(seed=0)[1]["difficulty"] == 0.5
    assert env.unwrapped.task.evidence[0].glyph_height <= 9.5
    env = make_discrete_env(family="serial_plate", curriculum={"seed": 1})
    _, info = env.reset(seed=0)
    assert info["family"] == "serial_plate" and info["difficulty"] is not None
    with pytest.raises(ValueError, match="exclude each other"):
        make_discrete_env(family="serial_plate", curriculum={}, task_pool=4)


# ------------------------------------------------------------------------------ export


def test_verl_rows_draw_family_and_difficulty_from_a_curriculum(serial_plate_env_id,
                                                                 tmp_path) -> None:
    from m3gym.integrations.export import curriculum_tasks, verl_rows
    from m3gym.integrations.session import EpisodeSession, task_ref
    from m3gym.tasks.registry import make_task

    env_id = serial_plate_env_id
    cur = Curriculum(["serial_plate"], bins=4, seed=0)
    for _ in range(30):  # the easiest bin is mastered, the others are hopeless: band mode
        cur.update("serial_plate", 0.1, True)
        cur.update("serial_plate", 0.9, False)
    cur.mode = "band"
    cur.save(tmp_path / "cur.json")
    triples = curriculum_tasks(tmp_path / "cur.json", env_id, 6, seed=2)
    assert triples == curriculum_tasks(cur, env_id, 6, seed=2)
    assert all(f == "serial_plate" and 0.0 <= d <= 1.0 for f, _, d in triples)
    rows = list(verl_rows(env_id, 3, seed=2, curriculum=str(tmp_path / "cur.json")))
    for row, (family, task_seed, difficulty) in zip(rows, triples):
        extra = row["extra_info"]
        assert (extra["family"], extra["task_seed"], extra["difficulty"]) == \
            (family, task_seed, difficulty)
        task = make_task(family, task_seed, difficulty=difficulty)
        assert row["reward_model"]["ground_truth"] == task.answer.value
        # the trainer's env rebuilds the same task from the row
        assert task_ref(row).options["difficulty"] == difficulty
        session = EpisodeSession(env_id)
        session.start(row)
        assert session.task.content_hash() == task.content_hash()
    with pytest.raises(ValueError, match="split='train'"):
        list(verl_rows(env_id, 3, split="test", curriculum=cur))
