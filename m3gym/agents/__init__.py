"""Agents behind one small interface: they see observations only (the oracle also gets the task)."""

from m3gym.agents.base import Agent, OracleAgent, RandomAgent, make_agent

__all__ = ["Agent", "OracleAgent", "RandomAgent", "make_agent"]
