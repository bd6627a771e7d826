import atexit
import os
import shutil
import tempfile

os.environ.setdefault("PYTHONHASHSEED", "0")

# Tests never read a cache they did not create: every test process (each xdist worker too) builds
# the offline world into a fresh cache directory of its own, removed at exit. Subprocesses that
# tests start inherit it. A user's ~/.cache/m3gym (or $M3GYM_CACHE) is never read.
_CACHE = tempfile.mkdtemp(prefix="m3gym-test-cache-")
os.environ["M3GYM_CACHE"] = _CACHE
atexit.register(shutil.rmtree, _CACHE, True)


def pytest_configure(config):
    """Register the reward audit's markers (tests/test_reward_audit.py)."""
    config.addinivalue_line("markers", "slow: long-running tests (deselect with -m 'not slow')")
    config.addinivalue_line(
        "markers", "reward_target: issue-10 reward-audit targets; fail until the reward is fixed")

