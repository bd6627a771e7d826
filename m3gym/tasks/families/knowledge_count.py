"""knowledge_count: search a team's kit colour, then count its players on a pitch."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import cv2
import numpy as np

from m3gym.deprecation import renamed_names
from m3gym.spec import AnswerSpec, Evidence, RefCall, Task
from m3gym.tasks import render as R
from m3gym.tasks.checkpoint_builders import (
    evidence_checkpoints,
    fetch_checkpoint,
    search_hit_checkpoint,
)
from m3gym.tasks.families import _analysis_common as ac
from m3gym.tasks.families._scene_common import lerp_range
from m3gym.tasks.registry import FamilyConfig, register_family
from m3gym.tasks.render import pitch as draw
from m3gym.web.logos import PALETTE
from m3gym.web.world import build_world

SURFACES: dict[str, R.Color] = {
    "grass": (62, 128, 58), "court": (196, 150, 98), "ice": (222, 232, 240),
    "clay": (176, 90, 60), "turf_blue": (40, 90, 150),
}
"""Pitch surfaces and their base colour."""


def _colour_distance(a: R.Color, b: R.Color) -> float:
    """Return the Euclidean RGB distance of two colours."""
    return float(math.dist(a, b))


def _draw_player(img: np.ndarray, x: int, y: int, size: int, kit: R.Color,
                 rng: np.random.Generator) -> None:
    """Draw a small player (:func:`draw.draw_player`) with the top-left of its box at (x, y)."""
    draw.draw_player(img, x, y, size, kit, rng)


@register_family
@dataclass
class KnowledgeCountFamily(FamilyConfig):
    """Count the players of a named (fictional) team on a crowded pitch.

    Scene:
        A match photo (2200–2600 px wide): a marked pitch with mowing stripes, spectators in the
        stands, a ball and the players of 1 + ``other_teams`` teams (``players_per_team`` each)
        in distinct kit colours, including, when it exists, the near-duplicate team's colour.
        It stays flat with ``scenes="photo"``: the pitch fills the frame, with no surface
        around it for a photograph to replace (``flat_scene_reason``).
    Question:
        "How many players of the <team> are on the pitch in this photo?" (or a rephrasing) —
        six consecutive counts to choose from.
    Why a tool is needed:
        The question names a team but not its colours; its kit colour is stated only in the prose
        of its page in the offline world, so the agent must ``web_search`` the team and
        ``fetch_webpage`` the hit. The players are small figures (their height between the
        smallest that a half-pitch crop shows legibly and the largest still illegible at view
        size; ``size_frac`` picks the part of that band), 6–8 px blobs at view size 768 whose
        kit colours merge; the two halves of the pitch, cropped in parallel, show them legibly.
    Reference trajectory:
        web_search the team → fetch_webpage its page → [crop left half ∥ crop right half].
    Checkpoints:
        ``search_hit`` (the team's page ranks first), ``fetch``, and per half an S checkpoint on
        its crop, a ``v_tool`` and a ``v_true``.
    Difficulty:
        ``other_teams`` (1 at 0 → 4 at 1: more kit colours), ``players_per_team`` (1–6 → 7–12:
        more to count) and ``size_frac`` (0.6–1 → 0–0.3 of the legible-size band: smaller
        players).
    Config:
        ``split``/``world_seed`` (the offline world), ``other_teams`` (within 1–4),
        ``players_per_team`` (within 1–12), ``size_frac`` (within 0–1).
    """

    name: ClassVar[str] = "knowledge_count"
    flat_scene_reason: ClassVar[str] = (
        "The scene is a whole pitch seen from above, edge to edge: there is no surface around "
        "the object for a photograph to replace.")
    level: ClassVar[int] = 3
    domains: ClassVar[tuple[str, ...]] = ("Culture", "Life")
    description: ClassVar[str] = (
        "web_search team → fetch_webpage (kit colour) → crop both pitch halves ∥ → count.")

    split: str = "train"
    world_seed: int = 0
    other_teams: tuple[int, int] = (2, 3)
    players_per_team: tuple[int, int] = (3, 10)
    size_frac: tuple[float, float] = (0.0, 1.0)

    @classmethod
    def difficulty_knobs(cls, difficulty: float) -> dict[str, Any]:
        """Return team count, crowd size and player size for ``difficulty`` (0 easiest)."""
        return {
            "other_teams": lerp_range(difficulty, (1, 1), (4, 4), integer=True),
            "players_per_team": lerp_range(difficulty, (1, 6), (7, 12), integer=True),
            "size_frac": lerp_range(difficulty, (0.6, 1.0), (0.0, 0.3)),
        }

    def validate(self) -> None:
        """Check the world and the crowd parameters."""
        ac.check_world_config(self.split, self.world_seed)
        if not 1 <= self.other_teams[0] <= self.other_teams[1] <= 4:
            raise ValueError("other_teams must satisfy 1 <= low <= high <= 4")
        if not 1 <= self.players_per_team[0] <= self.players_per_team[1] <= 12:
            raise ValueError("players_per_team must satisfy 1 <= low <= high <= 12")
        if not 0.0 <= self.size_frac[0] <= self.size_frac[1] <= 1.0:
            raise ValueError("size_frac must satisfy 0 <= low <= high <= 1")

    def generate(self, rng: np.random.Generator) -> Task:
        """Build one task."""
        world = build_world(self.world_seed, self.split)
        domain = R.pick(rng, self.domains)
        team = world.pick(rng, kind="team")
        kit_name = team.fact("kit_colour").value
        colours = [kit_name]
        for other in world.distractors(team):
            c = other.attributes.get("kit_colour")
            if c is not None and c not in colours:
                colours.append(c)
        n_other = int(rng.integers(self.other_teams[0], self.other_teams[1] + 1))
        kit_pool = [c for c in PALETTE if c in ("red", "blue", "green", "yellow", "orange",
                                                  "purple", "black", "white")]
        for i in rng.permutation(len(kit_pool)):
            if len(colours) >= 1 + n_other:
                break
            if kit_pool[int(i)] not in colours:
                colours.append(kit_pool[int(i)])
        colours = colours[:1 + n_other]
        rgb = [PALETTE[c] for c in colours]
        surfaces = [s for s, col in SURFACES.items()
                    if all(_colour_distance(col, k) >= 95 for k in rgb)]
        surface = R.pick(rng, surfaces or ["court"])

        w = int(rng.integers(2200, 2601))
        h = int(w * rng.uniform(0.6, 0.68))
        fw = int(w * rng.uniform(0.8, 0.88))
        fh = int(h * rng.uniform(0.68, 0.76))
        fx0 = int(rng.integers(int(w * 0.04), w - fw - int(w * 0.04)))
        fy0 = int(rng.integers(int(h * 0.08), h - fh - int(h * 0.06)))
        fx1, fy1 = fx0 + fw, fy0 + fh
        mid = (fx0 + fx1) // 2
        # back to front: terraces of spectators, advertising boards, the pitch and its markings
        img = np.empty((h, w, 3), np.uint8)
        gap, depth = int(rng.integers(8, 16)), int(rng.integers(16, 26))
        draw.draw_stands(img, rng)
        img = cv2.GaussianBlur(img, (0, 0), 1.6)  # the stands lie outside the depth of field
        run_off = R.grow_box((fx0, fy0, fx1, fy1), gap, w, h)
        base = R.jitter_color(rng, SURFACES[surface], 10)
        cv2.rectangle(img, run_off[:2], (run_off[2] - 1, run_off[3] - 1), draw.shade(base, 0.9), -1)
        sponsors = [R.fake_company(rng, ascii_only=True) for _ in range(5)]
        draw.draw_boards(img, rng, (fx0, fy0, fx1, fy1), gap, depth, sponsors)
        line = (240, 240, 236) if surface != "ice" else (200, 40, 40)
        draw.draw_pitch(img, rng, (fx0, fy0, fx1, fy1), base, line, float(rng.uniform(2.0, 3.4)))

        half_long = max(fw / 2, fh)
        p_lo = 1.5 * ac.MIN_VIEW_HEIGHT * half_long / R.VIEW_SIZE + 0.5
        p_hi = 0.8 * ac.MIN_VIEW_HEIGHT * w / R.VIEW_SIZE
        s_lo = math.ceil(p_lo)
        s_span = max(s_lo, int(p_hi)) - s_lo
        size = int(rng.integers(s_lo + round(self.size_frac[0] * s_span),
                                s_lo + round(self.size_frac[1] * s_span) + 1))
        band = size + 12
        halves = ((fx0 + 16, fy0 + 16, mid - band, fy1 - 16),
                  (mid + band, fy0 + 16, fx1 - 16, fy1 - 16))
        occupied: list[R.Box] = []
        counts = [0] * len(colours)
        bw = max(6, int(size * 0.5))
        # the options are drawn first (consecutive counts inside the feasible range) and the
        # named team's count is a uniformly random member of them
        window = R.value_window(rng, *self.players_per_team, 6)
        for t, _ in enumerate(colours):
            n = (int(R.pick(rng, window)) if t == 0 else
                 int(rng.integers(self.players_per_team[0], self.players_per_team[1] + 1)))
            for _ in range(n):
                spot = R.find_free_spot(rng, (bw, size), halves[int(rng.integers(2))], occupied,
                                        margin=6, tries=30)
                if spot is None:
                    continue
                _draw_player(img, spot[0], spot[1], size, rgb[t], rng)
                occupied.append((spot[0], spot[1], spot[0] + bw, spot[1] + size))
                counts[t] += 1
        if rng.random() < 0.7:  # the ball
            spot = R.find_free_spot(rng, (8, 8), halves[int(rng.integers(2))], occupied, 4, 10)
            if spot is not None:
                cv2.circle(img, (spot[0] + 4, spot[1] + 4), max(3, size // 6), (250, 250, 250),
                           -1, cv2.LINE_AA)
        img = R.camera_pipeline(img, rng, float(rng.uniform(0.05, 0.15)), [(fx0, fy0, fx1, fy1)])
        answer = counts[0]

        ev_left = Evidence("left_half", 0, (float(fx0), float(fy0), float(mid), float(fy1)),
                           text=None, glyph_height=float(size))
        ev_right = Evidence("right_half", 0, (float(mid), float(fy0), float(fx1), float(fy1)),
                            text=None, glyph_height=float(size))
        query = world.good_query(team)
        steps = (
            (RefCall("search", "web_search", {"query": query, "top_k": 5}),),
            (RefCall("fetch", "fetch_webpage", {"url": team.url}, ("search",)),),
            (ac.crop_call("crop_left", 0, (fx0, fy0, mid, fy1), img, size, ("fetch",)),
             ac.crop_call("crop_right", 0, (mid, fy0, fx1, fy1), img, size, ("fetch",))),
        )
        # the search must rank the team first; each half: crop, v_tool (crop kept it), v_true
        checkpoints = (
            search_hit_checkpoint("web_search", team.url, "s_search", ac.SEARCH_MAX_RANK,
                                  "search the team; its page ranks first"),
            fetch_checkpoint(team.url, "s_fetch", "open the team's page (kit colour)"),
            *evidence_checkpoints("left_half", [steps[2][0]]),
            *evidence_checkpoints("right_half", [steps[2][1]]),
        )
        question = R.pick(rng, (
            "How many players of the {team} are on the pitch in this photo?",
            "Count the {team} players visible on the field.",
            "In this match photo, how many players wear the kit of the {team}?",
        )).format(team=team.name)
        images = (R.freeze(img),)
        evidence = (ev_left, ev_right)
        return Task(
            task_id=f"{self.name}/0", family=self.name, level=3, domain=domain, images=images,
            question=question, answer=AnswerSpec(str(answer), match="numeric"),
            reference=steps, evidence=evidence, checkpoints=checkpoints,
            choices=(R.shuffled(rng, [str(v) for v in window]) if answer in window else
                     R.window_choices(rng, answer, 0, max(window), 6)),
            capabilities=("visual_grounding", "multi_hop", "parallelism", "knowledge"),
            metadata=ac.l3_metadata(self, domain, f"pitch:{surface}", images, evidence,
                           world={"seed": self.world_seed, "split": self.split},
                           entity=team.key, kit_colour=kit_name, colours=colours,
                           counts=counts, player_height=size, query=query,
                           distractor_query=world.distractor_query(team)),
        )


# KnowledgeCount: the class's name before every family class was called <Name>Family
__getattr__ = renamed_names(
    __name__, {"KnowledgeCount": ("KnowledgeCountFamily", lambda: KnowledgeCountFamily)})
