import atexit
import os
import shutil
import tempfile

import pytest

os.environ.setdefault("PYTHONHASHSEED", "0")

# Tests never read a cache they did not create: every test process (each xdist worker too) builds
# the offline world into a fresh cache directory of its own, removed at exit. Subprocesses that
# tests start inherit it. A user's ~/.cache/m3gym (or $M3GYM_CACHE) is never read.
_CACHE = tempfile.mkdtemp(prefix="m3gym-test-cache-")
os.environ["M3GYM_CACHE"] = _CACHE
atexit.register(shutil.rmtree, _CACHE, True)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """Print the random order's seed (pytest-randomly), so a failing order can be replayed."""
    seed = getattr(config.option, "randomly_seed", None)
    if isinstance(seed, int) and config.pluginmanager.hasplugin("randomly"):
        terminalreporter.write_line(f"random test order: --randomly-seed={seed} (replay it with "
                                    f"`pytest -n 2 -p randomly --randomly-seed={seed}`)")


def pytest_configure(config):
    """Register the reward audit's markers (tests/test_reward_audit.py)."""
    config.addinivalue_line("markers", "slow: long-running tests (deselect with -m 'not slow')")
    config.addinivalue_line(
        "markers", "reward_target: issue-10 reward-audit targets; fail until the reward is fixed")



# ------------------------------------------------------------------------------ global state
# A test leaves no global state behind: no family, env id or tool registered, no environment
# variable set or removed, no change of working directory. A leak makes other tests pass or fail
# with the order in which they land on xdist workers (an env id registered by one test once broke
# test_env_ids on a fresh machine), so it fails the test that leaked, at its teardown. Register
# with m3gym.testing.registered / `with register_tool(...)`, change env vars and the cwd with
# monkeypatch, and remove a gym id in the test's own fixture.

_ENV_VARS_SET_BY_LIBRARIES = frozenset({
    # set once by libraries on their first import (not by tests); never read by m3gym
    "KMP_DUPLICATE_LIB_OK", "KMP_INIT_AT_FORK", "TF_CPP_MIN_LOG_LEVEL", "TOKENIZERS_PARALLELISM",
    "PYTORCH_NVML_BASED_CUDA_CHECK", "CUDA_MODULE_LOADING", "RAY_USAGE_STATS_ENABLED",
    "TORCHINDUCTOR_CACHE_DIR",  # torch._inductor names its cache dir on first use
    "PYTEST_CURRENT_TEST",  # pytest names the running test phase in it
    "TORCH_CUDA_ARCH_LIST",  # verl sets it when it first builds a (CPU-only) worker config
})


def _global_state() -> dict:
    """Return the process-wide state a test must leave as it found it."""
    import gymnasium as gym

    from m3gym.tasks import registry
    from m3gym.tools import default_registry

    registry._load_builtin_families()
    ours = {env_id: str(spec.entry_point) for env_id, spec in gym.registry.items()
            if env_id.startswith("M3Bench") or str(spec.entry_point).startswith(
                ("m3gym", "tests", "examples"))}
    return {
        "gym env ids": ours,
        "task families": dict(registry._FAMILIES),
        "tools": [s.name for s in default_registry().specs()],
        "environment variables": {k: v for k, v in os.environ.items()
                                  if k not in _ENV_VARS_SET_BY_LIBRARIES},
        "working directory": os.getcwd(),
    }


def _state_diff(before: dict, after: dict) -> list[str]:
    """Return one line per part of the global state that differs (empty: none)."""
    lines = []
    for part, old in before.items():
        new = after[part]
        if old == new:
            continue
        if isinstance(old, dict):
            added = sorted(set(new) - set(old))
            removed = sorted(set(old) - set(new))
            changed = sorted(k for k in set(old) & set(new) if old[k] != new[k])
            lines.append(f"{part}: added {added}, removed {removed}, changed {changed}")
        else:
            lines.append(f"{part}: {old!r} -> {new!r}")
    return lines


@pytest.fixture(autouse=True)
def _no_global_state_left_behind():
    """Fail a test that leaves a registration, an env var or another cwd behind."""
    before = _global_state()
    yield
    leaked = _state_diff(before, _global_state())
    if leaked:
        pytest.fail("the test left global state behind (restore it in a fixture):\n  "
                    + "\n  ".join(leaked), pytrace=False)
