"""Tool argument schemas (m3gym.tools.base): what an agent sees does not depend on pydantic."""

from __future__ import annotations

from pydantic import BaseModel, Field

from m3gym.tools.base import inline_schema


class _Args(BaseModel):
    scale: float = Field(1.0, gt=0, le=16)
    zoom: float = Field(1.0, ge=0.5, le=5.0)
    steps: int = Field(3, ge=1, lt=10)


def test_whole_number_bounds_are_integers_and_other_values_stay():
    props = inline_schema(_Args.model_json_schema())["properties"]
    assert props["scale"]["exclusiveMinimum"] == 0 and props["scale"]["maximum"] == 16
    assert props["zoom"] == {"default": 1.0, "maximum": 5, "minimum": 0.5, "type": "number"}
    assert props["steps"]["exclusiveMaximum"] == 10
    bounds = [props["scale"]["exclusiveMinimum"], props["scale"]["maximum"],
              props["zoom"]["maximum"], props["steps"]["minimum"]]
    assert all(type(b) is int for b in bounds)  # 16, never 16.0 (pydantic 2.5 wrote 16.0)
    assert type(props["zoom"]["minimum"]) is float and type(props["zoom"]["default"]) is float


def test_refs_are_inlined_and_titles_dropped():
    class Outer(BaseModel):
        inner: _Args

    schema = inline_schema(Outer.model_json_schema())
    assert "$defs" not in schema and "title" not in schema
    assert schema["properties"]["inner"]["properties"]["steps"]["minimum"] == 1


def test_an_argument_named_title_is_kept():
    class Note(BaseModel):
        title: str = Field(..., max_length=80)
        body: str = ""

    schema = inline_schema(Note.model_json_schema())
    assert set(schema["properties"]) == {"title", "body"}  # pydantic's own "title" keys go
    assert schema["properties"]["title"] == {"maxLength": 80, "type": "string"}
    assert schema["required"] == ["title"]
