"""The reward audit's report: Markdown tables, the summary and the JSON record of an audit."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Any

from m3gym.audit.reward_outcomes import EnvAudit
from m3gym.audit.reward_targets import TargetCheck


def format_table(audit: EnvAudit) -> str:
    """Return the audit's table in Markdown (one row per policy)."""
    n = len(audit.results["oracle"].outcomes)
    lines = [f"### {audit.env_id} · preset `{audit.preset}` · {n} episodes (seeds from "
             f"{audit.seed}) · oracle return {audit.oracle_return:.3f}", "",
             "| policy | return | % oracle | non-answer | Acc | S | V | M3 | OT |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in audit.rows():
        tag = " (blind)" if r["blind"] else ""
        star = "*" if r["chance_adjusted"] else ""
        lines.append(
            f"| {r['policy']}{tag} | {r['return']:.3f}{star} | {r['pct_oracle']:.1f} | "
            f"{r['non_answer']:.3f} | {r['acc']:.2f} | {r['S']:.2f} | {r['V']:.2f} | "
            f"{r['m3']:.2f} | {r['OT']:.2f} |")
    return "\n".join(lines)


def family_rows(audit: EnvAudit) -> list[dict[str, Any]]:
    """Return, per task family, each policy's mean audited return as % of the family's oracle.

    Locates where blind profit comes from (a family whose reference calls carry no content is
    solved in process by knowing its tool names alone).
    """
    oracle = audit.results["oracle"]
    families = sorted({o.family for o in oracle.outcomes})
    rows = []
    for fam in families:
        idx = [i for i, o in enumerate(oracle.outcomes) if o.family == fam]
        base = float(oracle.returns()[idx].mean())
        row: dict[str, Any] = {"family": fam, "episodes": len(idx), "oracle_return": base}
        for name, res in audit.results.items():
            if name == "oracle":
                continue
            mean = float(res.returns()[idx].mean())
            row[name] = 100.0 * mean / base if base > 0 else float("nan")
        rows.append(row)
    return rows


def format_family_table(audit: EnvAudit) -> str:
    """Return :func:`family_rows` as a Markdown table (% of the family's oracle return)."""
    rows = family_rows(audit)
    names = [n for n in audit.results if n != "oracle"]
    lines = [f"{audit.env_id} · `{audit.preset}` · % of the family's oracle return", "",
             "| family | n | " + " | ".join(names) + " |",
             "|---|---:|" + "---:|" * len(names)]
    for r in rows:
        lines.append(f"| {r['family']} | {r['episodes']} | "
                     + " | ".join(f"{r[n]:.0f}" for n in names) + " |")
    return "\n".join(lines)


def summary_markdown(audits: Sequence[EnvAudit],
                     checks: Mapping[tuple[str, str], Sequence[TargetCheck]]) -> str:
    """Return one compact table per env: each policy's % of the oracle under every preset.

    ``checks`` maps ``(env_id, preset)`` to its target checks; each table is followed by the
    failed checks (or "all targets pass"). The metric columns (Acc, S, V, M3, OT) do not depend
    on the preset and are taken from the first.
    """
    out: list[str] = []
    envs = list(dict.fromkeys(a.env_id for a in audits))
    for env_id in envs:
        mine = [a for a in audits if a.env_id == env_id]
        presets = [a.preset for a in mine]
        rows = [{r["policy"]: r for r in a.rows()} for a in mine]
        n = len(mine[0].results["oracle"].outcomes)
        out += [f"**{env_id}** ({n} episodes; % of the oracle's return per preset, oracle return "
                + ", ".join(f"{a.preset} {a.oracle_return:.2f}" for a in mine) + ")", "",
                "| policy | " + " | ".join(f"`{p}`" for p in presets)
                + " | Acc | S | V | M3 | OT |",
                "|---|" + "---:|" * (len(presets) + 5)]
        for name in rows[0]:
            first = rows[0][name]
            label = f"{name} (blind)" if first["blind"] else name
            out.append(f"| {label} | " + " | ".join(f"{r[name]['pct_oracle']:.1f}" for r in rows)
                       + f" | {first['acc']:.2f} | {first['S']:.2f} | {first['V']:.2f} | "
                       f"{first['m3']:.2f} | {first['OT']:.2f} |")
        failed = [f"`{a.preset}` {c.target} {c.policy}: {c.detail}"
                  for a in mine for c in checks[(env_id, a.preset)] if not c.passed]
        out += ["", "Failed targets: " + ("none" if not failed else ""), ""]
        out += [f"- {f}" for f in failed]
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def format_checks(checks: Sequence[TargetCheck]) -> str:
    """Return one ``PASS``/``FAIL`` line per target check."""
    return "\n".join(f"{'PASS' if c.passed else 'FAIL'}  {c.target:<18} {c.policy:<20} {c.detail}"
                     for c in checks)


def audit_json(audit: EnvAudit, checks: Sequence[TargetCheck]) -> dict[str, Any]:
    """Return a JSON-serializable record of one audit: rows, checks and every episode."""
    return {
        "env": audit.env_id, "preset": audit.preset, "seed": audit.seed,
        "oracle_return": audit.oracle_return, "rows": audit.rows(),
        "families": family_rows(audit),
        "checks": [asdict(c) for c in checks],
        "episodes": {n: [asdict(o) for o in r.outcomes] for n, r in audit.results.items()},
    }
