"""Audits of the environment as a specification: leak probes (and the reward audit beside them)."""
