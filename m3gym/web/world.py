"""The offline world: entities, their pages and logos, a BM25 text index and a logo index."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property, lru_cache

import bm25s
import numpy as np

from m3gym.urls import normalize_url
from m3gym.web.entities import (
    FILLERS,
    INTROS,
    KIND_NOUN,
    KINDS,
    Entity,
    Fact,
    draft_entities,
    finalize,
)
from m3gym.web.logos import (
    LogoIndex,
    match_logos,
    render_logo,
)
from m3gym.web.names import check_split, pick
from m3gym.web.store import LogoStore, load_logo_store

SPLIT_CODES: dict[str, int] = {"train": 0, "test": 1}
MAX_RELATED_LINKS = 8
SNIPPET_CHARS = 220
WORD = re.compile(r"\w\w+")


@dataclass(frozen=True)
class Page:
    """A web page of the world (one per entity).

    Attributes:
        url: the page url.
        title: the page title (the entity name plus a site suffix).
        sentences: the body sentences, in order (intro, facts, filler).
        links: ``(title, url)`` of related pages.
        entity: key of the entity the page describes.
        image_url: url of the page's logo image.
    """

    url: str
    title: str
    sentences: tuple[str, ...]
    links: tuple[tuple[str, str], ...]
    entity: str
    image_url: str

    @property
    def body(self) -> str:
        """The body text: the sentences as one paragraph."""
        return " ".join(self.sentences)

    def text(self, max_chars: int | None = None) -> str:
        """Return the page as plain text (title, url, body, links, image), cut to ``max_chars``."""
        lines = [self.title, self.url, "", self.body, "", f"Logo image: {self.image_url}"]
        if self.links:
            lines += ["", "Links:"] + [f"- {t}: {u}" for t, u in self.links]
        full = "\n".join(lines)
        if max_chars is not None and len(full) > max_chars:
            return full[:max_chars] + f"\n[... truncated at {max_chars} characters]"
        return full


@dataclass(frozen=True)
class SearchHit:
    """One ranked text-search result."""

    title: str
    url: str
    snippet: str
    score: float
    entity: str


@dataclass(frozen=True)
class ImageHit:
    """One ranked reverse-image-search result (the page whose logo matched)."""

    title: str
    url: str
    image_url: str
    score: float
    entity: str


SITE_SUFFIX = {"company": "Official site", "team": "Official club site",
               "product": "Product page"}


def page_title(entity: Entity) -> str:
    """Return the title of an entity's page."""
    return f"{entity.name} - {SITE_SUFFIX.get(entity.kind, 'M3 Wiki')}"


def query_tokens(text: str) -> list[str]:
    """Return the BM25 tokens of ``text`` (bm25s' tokenizer, English stopwords removed)."""
    return bm25s.tokenize([text], return_ids=False, stopwords="en", show_progress=False)[0]


def best_snippet(sentences: tuple[str, ...], query: str) -> str:
    """Return the sentence sharing the most words with ``query`` (ties: the earliest)."""
    words = set(WORD.findall(query.lower()))
    best, best_overlap = sentences[0], -1
    for s in sentences:
        overlap = sum(1 for w in WORD.findall(s.lower()) if w in words)
        if overlap > best_overlap:
            best, best_overlap = s, overlap
    return best if len(best) <= SNIPPET_CHARS else best[:SNIPPET_CHARS - 3] + "..."


def build_pages(rng: np.random.Generator, entities: tuple[Entity, ...]) -> tuple[Page, ...]:
    """Return one page per entity: intro, fact sentences, an optional filler, related links."""
    by_key = {e.key: e for e in entities}
    incoming: dict[str, list[Entity]] = {e.key: [] for e in entities}
    for e in entities:
        for target in e.relations.values():
            incoming[target].append(e)
    pages = []
    for e in entities:
        sentences = [INTROS[e.kind].format(name=e.name)] + [f.sentence for f in e.facts]
        if rng.random() < 0.5:
            sentences.append(pick(rng, FILLERS))
        linked = [by_key[k] for k in e.relations.values()]
        linked += incoming[e.key][:MAX_RELATED_LINKS]
        links = tuple((page_title(x), x.url) for x in linked)
        pages.append(Page(e.url, page_title(e), tuple(sentences), links, e.key, e.image_url))
    return tuple(pages)


class World:
    """A deterministic fictional knowledge world: entities, pages, logos and two search indexes.

    Build it with :func:`build_world`. Lookups return ``None`` (pages) or raise ``KeyError``
    (entities by key); searches raise ``ValueError`` for unusable input.
    """

    def __init__(self, seed: int, split: str, entities: tuple[Entity, ...],
                 pages: tuple[Page, ...]) -> None:
        self.seed = seed
        self.split = split
        self.entities = entities
        self.pages = pages
        self._index = {e.key: i for i, e in enumerate(entities)}
        self._by_url = {normalize_url(e.url): i for i, e in enumerate(entities)}
        self._by_image_url = {normalize_url(e.image_url): i for i, e in enumerate(entities)}
        self._by_name = {e.name.lower(): i for i, e in enumerate(entities)}
        self._kinds = {k: tuple(e for e in entities if e.kind == k) for k in KINDS}
        groups: dict[int, list[Entity]] = {}
        for e in entities:
            groups.setdefault(e.group, []).append(e)
        self._groups = {g: tuple(m) for g, m in groups.items()}
        self._logos: dict[int, np.ndarray] = {}
        corpus = [" ".join([p.title] * 3 + list(p.sentences)) for p in pages]
        tokens = bm25s.tokenize(corpus, return_ids=False, stopwords="en", show_progress=False)
        self._bm25 = bm25s.BM25()
        self._bm25.index(tokens, show_progress=False)

    def __len__(self) -> int:
        return len(self.entities)

    def __repr__(self) -> str:
        return f"World(seed={self.seed}, split={self.split!r}, entities={len(self.entities)})"

    # ----------------------------------------------------------------- lookups
    def entity(self, key: str) -> Entity:
        """Return the entity with ``key`` (``"<kind>/<slug>"``); ``KeyError`` if unknown."""
        return self.entities[self._index[key]]

    def entity_by_name(self, name: str) -> Entity | None:
        """Return the entity named ``name`` (case-insensitive), or ``None``."""
        i = self._by_name.get(name.strip().lower())
        return None if i is None else self.entities[i]

    def entity_by_url(self, url: str) -> Entity | None:
        """Return the entity whose page url or logo url is ``url``, or ``None``."""
        u = normalize_url(url)
        i = self._by_url.get(u, self._by_image_url.get(u))
        return None if i is None else self.entities[i]

    def entities_of_kind(self, kind: str) -> tuple[Entity, ...]:
        """Return every entity of ``kind`` (one of ``KINDS``), in world order."""
        if kind not in self._kinds:
            raise KeyError(f"unknown kind {kind!r}; kinds are {list(KINDS)}")
        return self._kinds[kind]

    def page(self, url: str) -> Page | None:
        """Return the page at ``url`` (normalized: case, trailing slash, http), or ``None``."""
        i = self._by_url.get(normalize_url(url))
        return None if i is None else self.pages[i]

    def page_of(self, entity: Entity | str) -> Page:
        """Return the page of an entity (or entity key)."""
        key = entity if isinstance(entity, str) else entity.key
        return self.pages[self._index[key]]

    def related(self, entity: Entity, attribute: str) -> Entity:
        """Return the entity that the relation ``attribute`` of ``entity`` points to."""
        target = entity.fact(attribute).related
        if target is None:
            raise KeyError(f"{entity.key}.{attribute} is a plain value, not a relation")
        return self.entity(target)

    def distractors(self, entity: Entity) -> tuple[Entity, ...]:
        """Return the near-duplicates of ``entity`` (same group, itself excluded)."""
        return tuple(e for e in self._groups[entity.group] if e.key != entity.key)

    # ---------------------------------------------------------- for task authors
    def pick(self, rng: np.random.Generator, kind: str | None = None,
             min_distractors: int = 0, base_only: bool = True) -> Entity:
        """Draw an entity with ``rng``.

        Args:
            rng: the only source of randomness.
            kind: restrict to one kind (``None``: any kind).
            min_distractors: require at least this many near-duplicates.
            base_only: draw only base entities (not themselves variants of another).
        """
        pool = self.entities if kind is None else self.entities_of_kind(kind)
        ok = [e for e in pool if (not base_only or not e.is_distractor)
              and len(self._groups[e.group]) - 1 >= min_distractors]
        if not ok:
            raise ValueError(f"no entity of kind {kind!r} with {min_distractors} distractors")
        return ok[int(rng.integers(len(ok)))]

    def pick_fact(self, rng: np.random.Generator, entity: Entity, numeric: bool | None = None,
                  relation: bool | None = None) -> Fact:
        """Draw one fact of ``entity``; filter on numeric values and on relations if given."""
        ok = [f for f in entity.facts
              if (numeric is None or (f.numeric is not None) == numeric)
              and (relation is None or (f.related is not None) == relation)]
        if not ok:
            raise ValueError(f"{entity.key} has no fact with numeric={numeric}, "
                             f"relation={relation}")
        return ok[int(rng.integers(len(ok)))]

    def good_query(self, entity: Entity) -> str:
        """Return a search query whose top result is the entity's page (its name + kind word)."""
        return f"{entity.name} {KIND_NOUN[entity.kind]}"

    def distractor_query(self, entity: Entity) -> str | None:
        """Return a query that finds a near-duplicate first (not ``entity``), or ``None``."""
        others = self.distractors(entity)
        return None if not others else self.good_query(others[0])

    def logo(self, entity: Entity | str) -> np.ndarray:
        """Return the entity's logo, a read-only ``uint8`` RGB image.

        Logos come from the world's :attr:`logo_store` (rendered once per machine and
        memory-mapped, see :mod:`m3gym.web.store`).
        """
        i = self._index[entity if isinstance(entity, str) else entity.key]
        if i not in self._logos:
            self._logos[i] = self.logo_store.logo(i)
        return self._logos[i]

    @cached_property
    def logo_store(self) -> LogoStore:
        """Every logo of the world and its search index, shared by the machine's processes."""
        return load_logo_store(f"{self.seed}-{self.split}", [e.logo for e in self.entities],
                               lambda: (render_logo(e.logo) for e in self.entities))

    # ------------------------------------------------------------------ search
    def search(self, query: str, top_k: int = 5) -> list[SearchHit]:
        """Return up to ``top_k`` pages ranked by BM25 over title and body (ties: world order).

        Pages that share no term with the query are not returned.
        """
        tokens = query_tokens(query)
        if not tokens or top_k < 1:
            return []
        scores = self._bm25.get_scores(tokens)
        order = np.argsort(-scores, kind="stable")[:top_k]
        hits = []
        for i in order:
            if scores[i] <= 0:
                break
            p = self.pages[int(i)]
            hits.append(SearchHit(p.title, p.url, best_snippet(p.sentences, query),
                                  round(float(scores[i]), 4), p.entity))
        return hits

    @cached_property
    def logo_descriptors(self) -> LogoIndex:
        """The reverse-image-search index of every logo (built on first use)."""
        return self.logo_store.index

    def image_search(self, image: np.ndarray, top_k: int = 5) -> list[ImageHit]:
        """Return the ``top_k`` (at most 48) pages whose logos best match ``image``.

        ``image`` may be a crop holding a logo with a margin, at any scale, in colour or gray,
        with changed brightness/contrast. Raises ``ValueError`` for an unusable image.
        """
        check_query_image(image)
        indices, scores = match_logos(image, self.logo_descriptors)
        out = []
        for i, score in zip(indices[:top_k], scores[:top_k]):
            e = self.entities[int(i)]
            out.append(ImageHit(page_title(e), e.url, e.image_url, round(float(score), 4), e.key))
        return out


MIN_QUERY_SIDE = 8


def check_query_image(image: np.ndarray) -> None:
    """Raise ``ValueError`` unless ``image`` is a ``uint8`` gray/RGB(A) image of usable size."""
    if not isinstance(image, np.ndarray) or image.dtype != np.uint8:
        raise ValueError("the query image must be a uint8 numpy array")
    if image.ndim not in (2, 3) or (image.ndim == 3 and image.shape[2] not in (1, 3, 4)):
        raise ValueError(f"the query image must be (H, W) or (H, W, 3|4), got {image.shape}")
    if min(image.shape[:2]) < MIN_QUERY_SIDE:
        raise ValueError(f"the query image is {image.shape[1]}x{image.shape[0]} pixels; reverse "
                         f"image search needs at least {MIN_QUERY_SIDE} pixels on each side")


def world_rng(seed: int, split: str) -> np.random.Generator:
    """Return the generator a world is drawn from: ``SeedSequence([seed, split code])``."""
    return np.random.default_rng(np.random.SeedSequence([seed, SPLIT_CODES[check_split(split)]]))


@lru_cache(maxsize=8)
def build_world(seed: int = 0, split: str = "train") -> World:
    """Build (or return the cached) world for ``(seed, split)``.

    Train and test worlds have disjoint names (split-specific initials). The same arguments give
    an identical world in every process.
    """
    if not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    rng = world_rng(seed, split)
    entities = tuple(finalize(rng, draft_entities(rng, split)))
    pages = build_pages(rng, entities)
    return World(seed, split, entities, pages)
