"""Audits of the environment as a specification: the reward audit and the leak probes.

:mod:`m3gym.audit.leaks` holds the choices-only and view-only leak probes (``m3gym audit-leaks``).

:mod:`m3gym.audit.tool_necessity` (the share of a reference tool's output the view cannot
explain, per-op ablation) and :mod:`m3gym.audit.readers` (a strong OCR reader without and with the
tool) are ``m3gym audit-tools`` (:mod:`m3gym.audit.tools_cli`).

:mod:`m3gym.audit.blind` holds the blind policy library, :mod:`m3gym.audit.reward_audit` runs it
beside the reference agents and checks the targets, :mod:`m3gym.audit.cli` is
``m3gym audit-reward``.
"""

from m3gym.audit.blind import BLIND_POLICIES, blind_shape, make_blind_policy
from m3gym.audit.reward_audit import (
    EnvAudit,
    TargetCheck,
    audit_env,
    check_targets,
    format_checks,
    format_table,
    reward_presets,
)

__all__ = ["BLIND_POLICIES", "EnvAudit", "TargetCheck", "audit_env", "blind_shape",
           "check_targets", "format_checks", "format_table", "make_blind_policy",
           "reward_presets"]
