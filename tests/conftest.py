import os

os.environ.setdefault("PYTHONHASHSEED", "0")


def pytest_configure(config):
    """Register the reward audit's markers (tests/test_reward_audit.py)."""
    config.addinivalue_line("markers", "slow: long-running tests (deselect with -m 'not slow')")
    config.addinivalue_line(
        "markers", "reward_target: issue-10 reward-audit targets; fail until the reward is fixed")
