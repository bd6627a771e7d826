"""Scoring: checkpoints (S, V), alignment/M3, answer, overthink, safety and failure taxonomy."""
