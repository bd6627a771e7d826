"""Planning a run: episode ids and reset seeds, the tasks of each env (frozen and train)."""

from m3gym.eval.config import EvalConfig
from m3gym.eval.plan import env_scope, env_tasks, episode_seed, plan_episodes


def test_plan_is_order_independent():
    cfg = EvalConfig(envs=("M3Bench-L2", "M3Bench-L1"), agent="random", episodes=4, seed=3)
    specs = plan_episodes(cfg)
    swapped = plan_episodes(EvalConfig(envs=("M3Bench-L1", "M3Bench-L2"), agent="random",
                                       episodes=4, seed=3))
    assert {s.episode_id: s.seed for s in specs} == {s.episode_id: s.seed for s in swapped}
    assert all(s.seed == episode_seed(3, s.task_seed) for s in specs)
    train = plan_episodes(EvalConfig(envs=("M3Bench-L1",), agent="random", episodes=5,
                                     split="train"))
    assert all(0 <= s.task_seed < 1_000_000_000 for s in train)
    assert train == plan_episodes(EvalConfig(envs=("M3Bench-L1",), agent="random", episodes=5,
                                             split="train"))


def test_classic_suite_env_scope_and_heldout_tasks() -> None:
    level, families = env_scope("M3Bench-Classic")
    assert level == 1 and families == ["glyph_faint", "glyph_rotate", "glyph_zoom"]
    tasks = env_tasks("M3Bench-Classic", "test", 6, 0)
    assert [f for f, _ in tasks] == families * 2
    assert [s for _, s in tasks] == list(range(1_010_000_000, 1_010_000_006))
    assert env_tasks("M3Bench-Classic", "test", 6, 0) == tasks  # deterministic
    assert all(f in families for f, _ in env_tasks("M3Bench-Classic", "train", 5, 0))
    # the benchmark level still reads the frozen manifest
    assert {f for f, _ in env_tasks("M3Bench-L1", "test", 9, 0)} == {
        "faint_text", "rotated_text", "tiny_text", "ui_status"}
