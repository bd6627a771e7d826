"""Adapters for LLM/VLM RL trainers and the data they read.

- :mod:`m3gym.integrations.session`: one episode driven by a trainer (reset from a dataset row,
  step, finish, episode return and metrics); the core the adapters share, no extra dependencies.
- :mod:`m3gym.integrations.trl`: ``GRPOTrainer(environment_factory=...)`` (needs ``.[trl]``).
- :mod:`m3gym.integrations.verl`: the ``m3gym_agent`` agent loop (needs ``.[verl]``).
- :mod:`m3gym.integrations.datasets`: prompt datasets and the frozen split as a dataset.
- :mod:`m3gym.integrations.export`: verl parquet and SFT trajectories (``m3gym export``).
"""
