"""knowledge_count: search a team's kit colour, then count its players in the goal areas."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import cv2
import numpy as np

from m3gym.deprecation import renamed_names
from m3gym.spec import AnswerSpec, RefCall, Task
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

MIN_PLAYER: int = 8
"""Smallest player height (px): a shirt of fewer than 3 px rows has no pixel of its own colour."""

SIZE_SPAN: int = 2
"""Player heights span this many pixels above the smallest legible in an area's crop."""


def _colour_distance(a: R.Color, b: R.Color) -> float:
    """Return the Euclidean RGB distance of two colours."""
    return float(math.dist(a, b))


def player_width(size: int) -> int:
    """Return the width of a player ``size`` px tall (shoulders and arms)."""
    return max(4, int(round(size * 0.6)))


def _draw_small_player(img: np.ndarray, x: int, y: int, size: int, kit: R.Color,
                       rng: np.random.Generator) -> None:
    """Draw a tiny player seen from a high camera, the top-left of its box at (x, y).

    The box is :func:`player_width` wide and ``size`` tall: a head (skin under hair) a fifth of
    the height, a shirt in the kit colour with sleeves (its right side shaded) down to 60 %,
    shorts (white under a dark kit, else near black) and two legs.
    """
    bw = player_width(size)
    sh = draw.SHIFT
    one = 1 << sh

    def p(px: float, py: float) -> tuple[int, int]:
        return int(round(px * one)), int(round(py * one))

    skin = draw.SKIN[int(rng.integers(len(draw.SKIN)))]
    hair = draw.HAIR[int(rng.integers(len(draw.HAIR)))]
    shorts = (236, 236, 236) if sum(kit) / 3 < 90 else (30, 30, 34)
    cx = x + bw / 2.0
    head = max(1.0, size * 0.1)
    neck = y + 2 * head
    waist = y + size * 0.6
    hips = y + size * 0.75
    foot = y + size - 0.5
    for dx in (-bw * 0.18, bw * 0.18):  # legs
        cv2.line(img, p(cx + dx, hips), p(cx + dx, foot), skin, 1, cv2.LINE_AA, sh)
    cv2.rectangle(img, p(cx - bw * 0.32, waist), p(cx + bw * 0.32, hips), shorts, -1,
                  cv2.LINE_AA, sh)
    sleeve = neck + size * 0.18
    shirt = np.array([p(cx - bw / 2 + 0.3, neck), p(cx + bw / 2 - 0.3, neck),
                      p(cx + bw / 2 - 0.3, sleeve), p(cx + bw * 0.32, sleeve),
                      p(cx + bw * 0.32, waist), p(cx - bw * 0.32, waist),
                      p(cx - bw * 0.32, sleeve), p(cx - bw / 2 + 0.3, sleeve)], np.int32)
    cv2.fillPoly(img, [shirt], kit, cv2.LINE_AA, sh)
    cv2.rectangle(img, p(cx + 0.3, neck + 0.5), p(cx + bw * 0.32, waist - 0.3),
                  draw.shade(kit, 0.9), -1, cv2.LINE_AA, sh)
    cv2.circle(img, p(cx, y + head), int(round(head * one)), skin, -1, cv2.LINE_AA, sh)
    cv2.ellipse(img, p(cx, y + head * 0.8), p(head, head * 0.8), 0, 180, 360, hair, -1,
                cv2.LINE_AA, sh)


def _crops_show_the_areas(task: Task) -> bool:
    """Return whether the reference's crops show every evidence legibly (``v_true``)."""
    from m3gym.scoring.legibility import measure_evidence
    from m3gym.state import ImageState
    from m3gym.tools.base import ToolContext
    from m3gym.tools.registry import ToolRegistry
    from m3gym.tools.visual import VISUAL_TOOLS

    state = ImageState()
    for img in task.images:
        state.add_root(img)
    ctx = ToolContext(state=state, visible_images=len(state))
    registry = ToolRegistry(VISUAL_TOOLS)
    crops = [registry.execute(ctx, c.name, c.arguments, 0, c.id)
             for step in task.reference for c in step if c.name == "crop"]
    shown = [state[r.output_index] for r in crops if r.ok and r.output_index is not None]
    return all(any(measure_evidence(entry, ev).passed for entry in shown)
               for ev in task.evidence)


@register_family
@dataclass
class KnowledgeCountFamily(FamilyConfig):
    """Count the players of a named (fictional) team crowding the two goal areas.

    Scene:
        A match photo (2600–3000 px wide: wider than 2048 px so that a player the view shrinks
        to 2–3 px still reads in a crop of one goal area): a marked pitch with mowing stripes,
        spectators in the stands, a ball and the players of 1 + ``other_teams`` teams in
        distinct kit colours, including, when it exists, the near-duplicate team's colour.
        ``players_per_team`` of each team crowd the two goal areas as at a set piece, in clumps
        of up to ``clump_max`` standing shoulder to shoulder (``gap_range`` px apart, in rows of
        up to three); one to three of each team stand in open play, well away from both areas.
        It stays flat with ``scenes="photo"``: the pitch fills the frame, with no surface
        around it for a photograph to replace (``flat_scene_reason``).
    Question:
        "How many players of the <team> are inside the two goal areas in this photo?" (or a
        rephrasing) — six consecutive counts to choose from.
    Why a tool is needed:
        The question names a team but not its colours; its kit colour is stated only in the prose
        of its page in the offline world, so the agent must ``web_search`` the team and
        ``fetch_webpage`` the hit. The players are 8–10 px tall (the smallest that a crop of one
        goal area shows legibly, at least :data:`MIN_PLAYER`): 2–3 px in the view, where a clump
        of players 1–2 px apart is one blob of blended kit colours. A zoomed crop of each goal
        area, in parallel, separates the players and shows their shirts. No reader applies (the
        answer is a count): measured by the reader-independent share of ``m3gym audit-tools``
        and its per-op ablation (each crop is needed on its own).
    Reference trajectory:
        web_search the team → fetch_webpage its page → [crop left goal area ∥ crop right goal
        area], each zoomed.
    Checkpoints:
        ``search_hit`` (the team's page ranks first), ``fetch``, and per goal area an S
        checkpoint on its crop, a ``v_tool`` and a ``v_true``.
    Difficulty:
        ``other_teams`` (1 at 0 → 4 at 1: more kit colours), ``players_per_team`` (1–6 → 7–12:
        more to count), ``size_frac`` (0.6–1 → 0–0.3 of a 2 px band above the smallest legible
        height), ``gap_range`` (2–3 → 1 px between neighbours) and ``clump_max`` (2 → 5).
    Config:
        ``split``/``world_seed`` (the offline world), ``other_teams`` (within 1–4),
        ``players_per_team`` (within 1–12), ``size_frac`` (within 0–1), ``gap_range`` (px,
        within 1–4), ``clump_max`` (within 1–5).
    """

    name: ClassVar[str] = "knowledge_count"
    flat_scene_reason: ClassVar[str] = (
        "The scene is a whole pitch seen from above, edge to edge: there is no surface around "
        "the object for a photograph to replace.")
    level: ClassVar[int] = 3
    domains: ClassVar[tuple[str, ...]] = ("Culture", "Life")
    description: ClassVar[str] = (
        "web_search team → fetch_webpage (kit colour) → crop both goal areas ∥ → count.")

    split: str = "train"
    world_seed: int = 0
    other_teams: tuple[int, int] = (2, 3)
    players_per_team: tuple[int, int] = (3, 10)
    size_frac: tuple[float, float] = (0.0, 0.5)
    gap_range: tuple[int, int] = (1, 2)
    clump_max: int = 4

    @classmethod
    def difficulty_knobs(cls, difficulty: float) -> dict[str, Any]:
        """Return team count, crowd size, player size and crowding for ``difficulty``."""
        return {
            "other_teams": lerp_range(difficulty, (1, 1), (4, 4), integer=True),
            "players_per_team": lerp_range(difficulty, (1, 6), (7, 12), integer=True),
            "size_frac": lerp_range(difficulty, (0.6, 1.0), (0.0, 0.3)),
            "gap_range": lerp_range(difficulty, (2, 3), (1, 1), integer=True),
            "clump_max": int(round(2 + 3 * difficulty)),
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
        if not 1 <= self.gap_range[0] <= self.gap_range[1] <= 4:
            raise ValueError("gap_range must satisfy 1 <= low <= high <= 4")
        if not 1 <= self.clump_max <= 5:
            raise ValueError("clump_max must lie in 1..5")

    def generate(self, rng: np.random.Generator) -> Task:
        """Build one task: the first draw whose crops show both goal areas legibly.

        The camera's lighting and noise, on a rare draw, leave a team's tiny shirts below the
        contrast ``v_true`` measures; that draw is redrawn from the same generator (at most
        :data:`~m3gym.tasks.verify.VERIFY_ATTEMPTS` times; the last draw is kept).
        """
        from m3gym.tasks.verify import VERIFY_ATTEMPTS

        task = self.draw(rng)
        for _ in range(VERIFY_ATTEMPTS - 1):
            if _crops_show_the_areas(task):
                break
            task = self.draw(rng)
        return task

    def draw(self, rng: np.random.Generator) -> Task:
        """Draw one scene and its task (unverified; :meth:`generate` checks the crops)."""
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
        # every kit stands out from the surface; the named team's also in brightness
        surfaces = [s for s, col in SURFACES.items()
                    if all(_colour_distance(col, k) >= 95 for k in rgb)
                    and abs(R.luminance(col) - R.luminance(rgb[0])) >= 40]
        surface = R.pick(rng, surfaces or ["court"])

        w = int(rng.integers(2600, 3001))
        h = int(w * rng.uniform(0.6, 0.68))
        fw = int(w * rng.uniform(0.7, 0.78))
        fh = int(h * rng.uniform(0.6, 0.68))
        fx0 = int(rng.integers(int(w * 0.04), w - fw - int(w * 0.04)))
        fy0 = int(rng.integers(int(h * 0.08), h - fh - int(h * 0.06)))
        fx1, fy1 = fx0 + fw, fy0 + fh
        # back to front: terraces of spectators, advertising boards, the pitch and its markings
        img = np.empty((h, w, 3), np.uint8)
        gap, depth = int(rng.integers(8, 16)), int(rng.integers(16, 26))
        draw.draw_stands(img, rng)
        run_off = R.grow_box((fx0, fy0, fx1, fy1), gap, w, h)
        base = R.jitter_color(rng, SURFACES[surface], 10)
        # the stands lie outside the depth of field; the run-off around the pitch covers them
        img = draw.blur_around(img, run_off, 1.6, draw.shade(base, 0.9))
        sponsors = [R.fake_company(rng, ascii_only=True) for _ in range(5)]
        draw.draw_boards(img, rng, (fx0, fy0, fx1, fy1), gap, depth, sponsors)
        line = (240, 240, 236) if surface != "ice" else (200, 40, 40)
        draw.draw_pitch(img, rng, (fx0, fy0, fx1, fy1), base, line, float(rng.uniform(2.0, 3.4)))

        # the two goal areas (5.5 m x 18.32 m in front of each goal line)
        tx0, ty0, tx1, ty1, sx, sy = draw.pitch_markings((fx0, fy0, fx1, fy1))
        my = (ty0 + ty1) / 2
        areas = [(int(math.ceil(tx0)), int(math.ceil(my - 9.16 * sy)),
                  int(tx0 + 5.5 * sx), int(my + 9.16 * sy)),
                 (int(math.ceil(tx1 - 5.5 * sx)), int(math.ceil(my - 9.16 * sy)),
                  int(tx1), int(my + 9.16 * sy))]
        crop_boxes = [R.grow_box(a, 8, w, h) for a in areas]
        # the smallest player a crop of one area shows legibly (1.5 x 9 view px tall)
        long_side = max(max(b[2] - b[0], b[3] - b[1]) for b in crop_boxes)
        s_lo = max(MIN_PLAYER, math.ceil(ac.MIN_VIEW_HEIGHT * 1.5 * long_side / R.VIEW_SIZE + 0.5))
        size = s_lo + int(rng.integers(round(self.size_frac[0] * SIZE_SPAN),
                                       round(self.size_frac[1] * SIZE_SPAN) + 1))
        bw = player_width(size)
        gap_px = int(rng.integers(self.gap_range[0], self.gap_range[1] + 1))

        # the options are drawn first (consecutive counts inside the feasible range) and the
        # named team's count inside the areas is a uniformly random member of them
        window = R.value_window(rng, *self.players_per_team, 6)
        crowd: list[int] = []
        for t in range(len(colours)):
            n = (int(R.pick(rng, window)) if t == 0 else
                 int(rng.integers(self.players_per_team[0], self.players_per_team[1] + 1)))
            crowd += [t] * n
        crowd = [crowd[int(i)] for i in rng.permutation(len(crowd))]
        counts = [0] * len(colours)
        masks = [np.zeros((a[3] - a[1], a[2] - a[0]), bool) for a in areas]
        shirts = [m.copy() for m in masks]
        occupied: list[list[R.Box]] = [[], []]
        while crowd:  # a set piece: players in clumps, shoulder to shoulder, in both areas
            k = min(len(crowd), int(rng.integers(1, self.clump_max + 1)))
            clump, crowd = crowd[:k], crowd[k:]
            side = int(rng.integers(2))
            lacking = [a for a in (0, 1) if not masks[a].any()]
            if 0 in clump and lacking:  # the team stands in both areas when it has two players
                side = lacking[0]
            elif not occupied[1 - side] and occupied[side]:  # nor is an area left empty
                side = 1 - side
            ax0, ay0, ax1, ay1 = areas[side]
            bounds = (ax0 + 4, ay0 + 4, ax1 - 4, ay1 - 4)
            cols = min(k, 3)  # a crowd: rows of up to three, shoulder to shoulder
            rows = -(-k // cols)
            cw, ch = cols * (bw + gap_px) - gap_px, rows * (size + gap_px) - gap_px
            spot = R.find_free_spot(rng, (cw, ch + 1), bounds, occupied[side],
                                    margin=max(4, size // 2), tries=60)
            if spot is None:
                continue
            for j, t in enumerate(clump):
                px = spot[0] + (j % cols) * (bw + gap_px)
                py = spot[1] + (j // cols) * (size + gap_px) + int(rng.integers(0, 2))
                _draw_small_player(img, px, py, size, rgb[t], rng)
                counts[t] += 1
                # the evidence: the team's shirts (every shirt in an area without the team)
                patch = img[py:py + size, px:px + bw].astype(np.float32)
                shirt = np.linalg.norm(patch - np.float32(rgb[t]), axis=2) < 40
                sel = (slice(py - ay0, py - ay0 + size), slice(px - ax0, px - ax0 + bw))
                shirts[side][sel] |= shirt
                if t == 0:
                    masks[side][sel] |= shirt
            occupied[side].append((spot[0], spot[1], spot[0] + cw, spot[1] + ch + 1))
        # players of every team in open play, outside both areas (not counted)
        keep_out: list[R.Box] = [R.grow_box(a, max(40, 4 * size), w, h) for a in areas]
        open_play = (fx0 + 16, fy0 + 16, fx1 - 16, fy1 - 16)
        for t in range(len(colours)):
            for _ in range(int(rng.integers(1, 4))):
                spot = R.find_free_spot(rng, (bw, size), open_play, keep_out, margin=6, tries=30)
                if spot is not None:
                    _draw_small_player(img, spot[0], spot[1], size, rgb[t], rng)
                    keep_out.append((spot[0], spot[1], spot[0] + bw, spot[1] + size))
        if rng.random() < 0.7:  # the ball
            spot = R.find_free_spot(rng, (8, 8), open_play, keep_out, 4, 10)
            if spot is not None:
                cv2.circle(img, (spot[0] + 4, spot[1] + 4), max(3, size // 6), (250, 250, 250),
                           -1, cv2.LINE_AA)
        scene = img  # the camera leaves it as it is; the evidence grays only its two areas
        img = R.camera_pipeline(img, rng, float(rng.uniform(0.05, 0.15)), areas)
        answer = counts[0]

        evidence = tuple(R.region_evidence(name, scene, a, m if m.any() else every, text=None,
                                           glyph_height=float(size))
                         for name, a, m, every in zip(("left_area", "right_area"), areas, masks,
                                                      shirts))
        query = world.good_query(team)
        steps = (
            (RefCall("search", "web_search", {"query": query, "top_k": 5}),),
            (RefCall("fetch", "fetch_webpage", {"url": team.url}, ("search",)),),
            (ac.crop_call("crop_left", 0, crop_boxes[0], img, size, ("fetch",)),
             ac.crop_call("crop_right", 0, crop_boxes[1], img, size, ("fetch",))),
        )
        # the search must rank the team first; each area: crop, v_tool (crop kept it), v_true
        checkpoints = (
            search_hit_checkpoint("web_search", team.url, "s_search", ac.SEARCH_MAX_RANK,
                                  "search the team; its page ranks first"),
            fetch_checkpoint(team.url, "s_fetch", "open the team's page (kit colour)"),
            *evidence_checkpoints("left_area", [steps[2][0]]),
            *evidence_checkpoints("right_area", [steps[2][1]]),
        )
        question = R.pick(rng, (
            "How many players of the {team} are inside the two goal areas in this photo?",
            "Count the {team} players standing inside the goal areas.",
            "In this match photo, how many players inside the goal areas wear the kit of "
            "the {team}?",
        )).format(team=team.name)
        images = (R.freeze(img),)
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
                           goal_areas=[list(a) for a in areas],
                           distractor_query=world.distractor_query(team)),
        )


# KnowledgeCount: the class's name before every family class was called <Name>Family
__getattr__ = renamed_names(
    __name__, {"KnowledgeCount": ("KnowledgeCountFamily", lambda: KnowledgeCountFamily)})
