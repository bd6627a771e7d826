"""Tests of m3gym.eval, one file per module (test_<module>.py)."""
