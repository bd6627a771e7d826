"""An overlay world: a base offline world plus a few extra pages (a record's ``knowledge``).

:class:`OverlayWorld` wraps a base world (a :class:`~m3gym.web.World` or any proxy of one, such
as the env's lazy world) and adds :class:`KnowledgePage` objects:

* ``search`` ranks the extra pages **together with** the base world's pages in one BM25 index
  (the world's own scoring: bm25s, title counted three times plus the body, English stopwords
  removed), so an extra page competes on the same terms as every other page: it neither drowns
  the world's pages nor is drowned by them. Ties keep the base world's order, extra pages last.
* ``page(url)`` serves an extra page first (it shadows a base page with the same url, which then
  leaves the index too), then the base world's pages.
* everything else (``image_search``, ``entity_by_url``, ``logo``, ...) is the base world's.

Entries without a url get :func:`knowledge_url` of the record id and the entry index (sha256):
the same in every process. The combined index is built on the first search and cached per base
world and page set.
"""

from __future__ import annotations

import hashlib
import re
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import bm25s
import numpy as np

from m3gym.urls import normalize_url
from m3gym.web.world import SearchHit, best_snippet, query_tokens

KNOWLEDGE_HOST = "knowledge.m3gym.invalid"
"""Host of the urls given to knowledge entries that have none (``.invalid``: never on the web)."""

KNOWLEDGE_ENTITY = "knowledge"
"""Prefix of the ``entity`` field of a knowledge page's search hits (``knowledge/<index>``)."""

SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
MAX_CACHED_INDEXES = 32


def knowledge_url(record_id: str, index: int) -> str:
    """Return the stable url of knowledge entry ``index`` of record ``record_id``.

    ``https://knowledge.m3gym.invalid/<first 16 hex digits of sha256(id NUL index)>``.
    """
    digest = hashlib.sha256(f"{record_id}\x00{int(index)}".encode()).hexdigest()[:16]
    return f"https://{KNOWLEDGE_HOST}/{digest}"


def split_sentences(text: str) -> tuple[str, ...]:
    """Return the sentences of ``text`` (split after ``.``, ``!`` or ``?``; blank ones dropped)."""
    parts = [s.strip() for s in SENTENCE_END.split(" ".join(text.split()))]
    return tuple(s for s in parts if s) or ("",)


def page_document(title: str, sentences: Sequence[str]) -> str:
    """Return the text a page is indexed by: the title three times, then the body (the world's)."""
    return " ".join([title] * 3 + list(sentences))


@dataclass(frozen=True)
class KnowledgePage:
    """An extra page of an overlay world (a record's knowledge entry).

    Attributes:
        url: the page url (given, or :func:`knowledge_url`).
        title: the page title.
        sentences: the body, split into sentences (snippets pick one).
        entity: ``"knowledge/<index>"``, the ``entity`` of its search hits.
    """

    url: str
    title: str
    sentences: tuple[str, ...]
    entity: str

    @property
    def body(self) -> str:
        """The body text: the sentences as one paragraph."""
        return " ".join(self.sentences)

    def text(self, max_chars: int | None = None) -> str:
        """Return the page as plain text (title, url, body), cut to ``max_chars``."""
        full = "\n".join([self.title, self.url, "", self.body])
        if max_chars is not None and len(full) > max_chars:
            return full[:max_chars] + f"\n[... truncated at {max_chars} characters]"
        return full


def knowledge_pages(entries: Sequence[Mapping[str, Any]], record_id: str = ""
                    ) -> tuple[KnowledgePage, ...]:
    """Return the pages of knowledge ``entries`` (``{"title", "text", "url"?}``), in order.

    An entry without a url gets :func:`knowledge_url` of ``record_id`` and its index. Raises
    ``ValueError`` for an entry without a title or text, or two entries with the same url.
    """
    pages: list[KnowledgePage] = []
    seen: dict[str, int] = {}
    for i, e in enumerate(entries):
        title, text = e.get("title"), e.get("text")
        if not isinstance(title, str) or not title.strip():
            raise ValueError(f"knowledge[{i}].title must be a non-empty string")
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"knowledge[{i}].text must be a non-empty string")
        url = e.get("url") or knowledge_url(record_id, i)
        key = normalize_url(url)
        if key in seen:
            raise ValueError(f"knowledge[{i}].url {url!r} is also knowledge[{seen[key]}]'s")
        seen[key] = i
        pages.append(KnowledgePage(str(url), title.strip(), split_sentences(text),
                                   f"{KNOWLEDGE_ENTITY}/{i}"))
    return tuple(pages)


@dataclass(frozen=True)
class _Index:
    """The combined BM25 index: base page positions kept, then the extra pages."""

    bm25: bm25s.BM25
    base_rows: tuple[int, ...]  # base page index of each of the first rows
    n_docs: int


_BASE_TOKENS: weakref.WeakKeyDictionary[Any, list[list[str]]] = weakref.WeakKeyDictionary()
_INDEXES: weakref.WeakKeyDictionary[Any, dict[tuple[KnowledgePage, ...], _Index]] = (
    weakref.WeakKeyDictionary())


def _tokenize(docs: list[str]) -> list[list[str]]:
    if not docs:
        return []
    return list(bm25s.tokenize(docs, return_ids=False, stopwords="en", show_progress=False))


def _combined_index(world: Any, pages: tuple[KnowledgePage, ...]) -> _Index:
    """Return (cached per world object and page set) the index of ``world``'s pages + ``pages``."""
    per_world = _INDEXES.setdefault(world, {})
    if pages in per_world:
        return per_world[pages]
    base_tokens = _BASE_TOKENS.get(world)
    if base_tokens is None:
        base_tokens = _tokenize([page_document(p.title, p.sentences) for p in world.pages])
        _BASE_TOKENS[world] = base_tokens
    shadowed = {normalize_url(p.url) for p in pages}
    rows = tuple(i for i, p in enumerate(world.pages) if normalize_url(p.url) not in shadowed)
    extra = _tokenize([page_document(p.title, p.sentences) for p in pages])
    bm25 = bm25s.BM25()
    bm25.index([base_tokens[i] for i in rows] + extra, show_progress=False)
    index = _Index(bm25, rows, len(rows) + len(pages))
    if len(per_world) >= MAX_CACHED_INDEXES:
        per_world.pop(next(iter(per_world)))
    per_world[pages] = index
    return index


class OverlayWorld:
    """A base world plus extra pages, searched and fetched as one corpus (see the module doc).

    Args:
        base: the base world, or a proxy with a ``resolve()`` method returning it (resolved on
            the first lookup that needs it).
        pages: the extra pages (:func:`knowledge_pages`); their urls must be distinct.
    """

    def __init__(self, base: Any, pages: Sequence[KnowledgePage]) -> None:
        self.base = base
        self.extra_pages = tuple(pages)
        self._by_url = {normalize_url(p.url): p for p in self.extra_pages}
        if len(self._by_url) != len(self.extra_pages):
            raise ValueError("the overlay's pages must have distinct urls")

    def __repr__(self) -> str:
        return f"OverlayWorld({self.base!r}, pages={len(self.extra_pages)})"

    def resolve(self) -> Any:
        """Return the base world itself (a proxy's ``resolve()``)."""
        resolve = getattr(self.base, "resolve", None)
        return resolve() if callable(resolve) else self.base

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("base", "extra_pages", "_by_url"):
            raise AttributeError(name)
        return getattr(self.resolve(), name)

    def page(self, url: str) -> Any:
        """Return the extra page at ``url`` if any, else the base world's page (or ``None``)."""
        hit = self._by_url.get(normalize_url(url))
        return hit if hit is not None else self.resolve().page(url)

    def search(self, query: str, top_k: int = 5) -> list[SearchHit]:
        """Return up to ``top_k`` pages of the base world and the extra pages, ranked by BM25.

        One index holds both, so scores are comparable; ties keep base order, extra pages last.
        Pages that share no term with the query are not returned.
        """
        if not self.extra_pages:
            return self.resolve().search(query, top_k)
        tokens = query_tokens(query)
        if not tokens or top_k < 1:
            return []
        world = self.resolve()
        index = _combined_index(world, self.extra_pages)
        scores = index.bm25.get_scores(tokens)
        order = np.argsort(-scores, kind="stable")[:top_k]
        hits = []
        n_base = len(index.base_rows)
        for i in (int(j) for j in order):
            if scores[i] <= 0:
                break
            p = world.pages[index.base_rows[i]] if i < n_base else self.extra_pages[i - n_base]
            hits.append(SearchHit(p.title, p.url, best_snippet(p.sentences, query),
                                  round(float(scores[i]), 4), p.entity))
        return hits
