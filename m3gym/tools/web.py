"""The four offline retrieval tools, working on the task's :class:`~m3gym.web.World`.

``web_search``, ``image_search``, ``fetch_webpage`` and ``download_image`` read ``ctx.world``.
Every call returns its results as text for the agent and as a structured ``payload`` (result
urls, fetched url, downloaded url) that checkpoints such as ``search_hit`` and ``fetch`` read.
Aliases let agents written for Agentic-MME's released harness run unchanged: ``google_search``
(``query``, with its ``gl``/``hl`` locale arguments dropped) and ``google_lens_search``
(``image_ref`` "original"/"current" or ``image_path`` naming an image index).
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import Field, StrictInt, StrictStr, field_validator, model_validator
from pydantic.json_schema import SkipJsonSchema

from m3gym.tools.base import ToolAlias, ToolArgs, ToolContext, ToolError, ToolOutput, ToolSpec

MAX_QUERY_CHARS = 500
MAX_URL_CHARS = 2000


def require_world(ctx: ToolContext) -> Any:
    """Return ``ctx.world`` or raise the error every retrieval tool gives without a corpus."""
    if ctx.world is None:
        raise ToolError("no knowledge corpus in this task")
    return ctx.world


def clean_text(value: str, what: str, limit: int) -> str:
    """Return ``value`` stripped; raise ``ValueError`` when empty or longer than ``limit``."""
    text = value.strip()
    if not text:
        raise ValueError(f"{what} must not be empty")
    if len(text) > limit:
        raise ValueError(f"{what} is {len(text)} characters; at most {limit} are allowed")
    return text


class WebSearchArgs(ToolArgs):
    """Arguments of ``web_search``."""

    query: StrictStr = Field(description="Search query (1-500 characters).")
    top_k: StrictInt = Field(default=5, ge=1, le=10, description="Number of results (1-10).")

    @field_validator("query")
    @classmethod
    def _query_ok(cls, v: str) -> str:
        return clean_text(v, "query", MAX_QUERY_CHARS)


IMAGE_PATH_INDEX = re.compile(r"(\d+)(?:\.\w+)?\s*$")


class ImageSearchArgs(ToolArgs):
    """Arguments of ``image_search``.

    ``image_ref`` / ``image_path`` exist only for the ``google_lens_search`` alias and are hidden
    from the schema: ``"original"`` means image 0, ``"current"`` the newest image visible in this
    step, and a path such as ``"transformed_image_3.png"`` the index its trailing number gives.
    """

    image_index: StrictInt = Field(ge=0, description="Index of the image to search with.")
    top_k: StrictInt = Field(default=5, ge=1, le=10, description="Number of results (1-10).")
    image_ref: SkipJsonSchema[Literal["current", "original"] | None] = None

    @model_validator(mode="before")
    @classmethod
    def _from_harness(cls, data: Any) -> Any:
        if not isinstance(data, dict) or "image_index" in data:
            return data
        data = dict(data)
        path = data.pop("image_path", None)
        if isinstance(path, str):
            m = IMAGE_PATH_INDEX.search(path)
            if m is None:
                raise ValueError(f"image_path {path[:60]!r} names no image index")
            data["image_index"] = int(m.group(1))
        elif data.get("image_ref") in ("current", "original"):
            data["image_index"] = 0
        return data


class FetchWebpageArgs(ToolArgs):
    """Arguments of ``fetch_webpage``."""

    url: StrictStr = Field(description="The page url (http/https).")
    max_chars: StrictInt = Field(default=12000, ge=100, le=100_000,
                                 description="Maximum characters of page text to return.")

    @field_validator("url")
    @classmethod
    def _url_ok(cls, v: str) -> str:
        return clean_text(v, "url", MAX_URL_CHARS)


class DownloadImageArgs(ToolArgs):
    """Arguments of ``download_image``."""

    url: StrictStr = Field(description="Url of a page or of its logo image.")

    @field_validator("url")
    @classmethod
    def _url_ok(cls, v: str) -> str:
        return clean_text(v, "url", MAX_URL_CHARS)


def results_text(header: str, rows: list[dict[str, Any]]) -> str:
    """Return numbered result rows (title, url, optional snippet) under ``header``."""
    if not rows:
        return f"{header}\nNo results."
    lines = [header]
    for i, r in enumerate(rows, 1):
        lines.append(f"{i}. {r['title']}\n   {r['url']}")
        if r.get("snippet"):
            lines.append(f"   {r['snippet']}")
    return "\n".join(lines)


def web_search(ctx: ToolContext, args: WebSearchArgs) -> ToolOutput:
    """Rank the corpus pages for a text query (BM25 over title and body)."""
    world = require_world(ctx)
    hits = world.search(args.query, args.top_k)
    rows = [{"title": h.title, "url": h.url, "snippet": h.snippet} for h in hits]
    return ToolOutput(text=results_text(f"Search results for {args.query!r}:", rows),
                      payload={"query": args.query, "results": rows})


def image_search(ctx: ToolContext, args: ImageSearchArgs) -> ToolOutput:
    """Reverse-search an image of the state against the corpus's logos and emblems."""
    world = require_world(ctx)
    index = ctx.visible_images - 1 if args.image_ref == "current" else args.image_index
    entry = ctx.image(index)
    try:
        hits = world.image_search(entry.array, args.top_k)
    except ValueError as exc:
        raise ToolError(f"image_search on image {index}: {exc}") from None
    rows = [{"title": h.title, "url": h.url, "image_url": h.image_url} for h in hits]
    return ToolOutput(text=results_text(f"Pages with images matching image {index}:", rows),
                      payload={"image_index": index, "results": rows})


def unknown_url(url: str) -> ToolError:
    """Return the error for a url that is not in the corpus."""
    return ToolError(f"cannot fetch {url[:200]!r}: no such page in the offline corpus (use urls "
                     "from search results)")


def fetch_webpage(ctx: ToolContext, args: FetchWebpageArgs) -> ToolOutput:
    """Return a page's text: title, url, body, logo url and links."""
    world = require_world(ctx)
    page = world.page(args.url)
    if page is None:
        raise unknown_url(args.url)
    return ToolOutput(text=page.text(args.max_chars),
                      payload={"url": page.url, "title": page.title})


def download_image(ctx: ToolContext, args: DownloadImageArgs) -> ToolOutput:
    """Add a page's logo (given the page url or the logo url) to the state as a new root image."""
    world = require_world(ctx)
    entity = world.entity_by_url(args.url)
    if entity is None:
        raise ToolError(f"cannot download {args.url[:200]!r}: no such page or image in the "
                        "offline corpus")
    if ctx.downloads >= ctx.max_downloads:
        raise ToolError(f"download budget exhausted: at most {ctx.max_downloads} downloads per "
                        "episode")
    ctx.downloads += 1
    return ToolOutput(text=f"Downloaded the image of {entity.name} from {entity.image_url}.",
                      image=world.logo(entity), parent=None,
                      payload={"url": entity.url, "image_url": entity.image_url})


RETRIEVAL_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="web_search",
        description="Search the offline web corpus; returns ranked pages (title, url, snippet).",
        args_model=WebSearchArgs, fn=web_search, kind="retrieval", content={"query": "query"},
        code_signature="web_search(query, top_k=5)",
        aliases=(ToolAlias("google_search", rename={"q": "query", "num": "top_k"},
                           drop=("gl", "hl", "page", "autocorrect", "search_type")),)),
    ToolSpec(
        name="image_search",
        description="Reverse image search: find corpus pages whose logo or emblem matches the "
                    "image at image_index (crop to the logo first for best results).",
        args_model=ImageSearchArgs, fn=image_search, kind="retrieval",
        content={"image_index": "image"}, code_signature="image_search(image_index, top_k=5)",
        aliases=(ToolAlias("google_lens_search", rename={"num": "top_k"}),)),
    ToolSpec(
        name="fetch_webpage",
        description="Fetch a corpus page by url and return its text (title, body, links).",
        args_model=FetchWebpageArgs, fn=fetch_webpage, kind="retrieval", content={"url": "url"},
        code_signature="fetch_webpage(url, max_chars=12000)"),
    ToolSpec(
        name="download_image",
        description="Download the image (logo) of a corpus page, given the page url or the "
                    "image url; it becomes a new image index (at most 5 per episode).",
        args_model=DownloadImageArgs, fn=download_image, kind="retrieval", frame="new_root",
        content={"url": "url"}, code_signature="download_image(url)"),
)
"""The retrieval tools, ready for :class:`~m3gym.tools.registry.ToolRegistry`."""
