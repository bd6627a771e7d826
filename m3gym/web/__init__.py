"""The offline web world: fictional entities, their pages and logos, text and image search.

Nothing here touches the network; every name is invented (syllables drawn with the rng), so no
model can answer from prior knowledge. ``build_world(seed, split)`` is deterministic across
processes and cached in-process; ``"train"`` and ``"test"`` worlds have disjoint entity names.

Entities (:class:`Entity`) have a ``kind`` (``place``, ``person``, ``company``, ``building``,
``team``, ``product``, ``species``), a unique ``name`` and ``key`` (``"<kind>/<slug>"``), a page
``url``, an ``image_url`` (its logo), ordered :class:`Fact` objects (``attribute``, ``value`` as
written, the exact ``sentence`` of the page stating it, ``numeric`` value, ``related`` entity key
for relations such as ``maker``/``headquarters``) and a near-duplicate ``group``.

Recipe for a task-family author (``rng`` is the task's ``np.random.Generator``)::

    world = build_world(seed=0, split="train")
    target = world.pick(rng, kind="company", min_distractors=1)   # a base entity with twins
    twins = world.distractors(target)          # similar names, similar logos, other facts
    logo = world.logo(target)                  # read-only uint8 RGB (128x128), cached
    page = world.page_of(target)               # Page: url, title, sentences, links, image_url
    fact = world.pick_fact(rng, target, numeric=True)   # or target.fact("founded")
    fact.value, fact.sentence                  # the answer and the sentence that states it
    hq = world.related(target, "headquarters") # multi-hop: follow a relation to another entity
    world.good_query(target)                   # query whose top web_search hit is its page
    world.distractor_query(target)             # query whose top hit is a twin, not the target
    world.search(query, top_k)       # -> list[SearchHit(title, url, snippet, score, entity)]
    world.image_search(image, top_k) # -> list[ImageHit(title, url, image_url, score, entity)]
    world.page(url), world.entity(key), world.entity_by_name(name), world.entity_by_url(url)
    world.entities_of_kind("team")

Relations by kind: person.city → place, person has ``id_number``; company.headquarters → place,
company.ceo → person, company.parent → company (some); building.city/architect/owner; team
.home_city/venue/coach (and ``kit_colour`` from :data:`KIT_COLOURS`); product.maker → company
(and ``code`` like ``"K7-4F2"``); species.habitat → place, species.discovered_by → person.

Checkpoints can verify retrieval from the tools' payloads: ``web_search`` / ``image_search`` list
``{"title", "url", ...}`` under ``payload["results"]``; ``fetch_webpage`` gives ``payload["url"]``.
"""

from m3gym.web.entities import KIND_NOUN, KINDS, Entity, Fact
from m3gym.web.logos import KIT_COLOURS, PALETTE, LogoSpec, render_logo
from m3gym.web.world import (
    ImageHit,
    Page,
    SearchHit,
    World,
    build_world,
    normalize_url,
)

__all__ = [
    "KINDS", "KIND_NOUN", "KIT_COLOURS", "PALETTE", "Entity", "Fact", "ImageHit", "LogoSpec",
    "Page", "SearchHit", "World", "build_world", "normalize_url", "render_logo",
]
