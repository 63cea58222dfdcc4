"""A tool's contract written once, as two pydantic models: its arguments and its result. The
input and output schemas an agent reads in `tools/list` are generated from them, the arguments of
a call are checked by the first, and the structured content of a result is built with the second.

Why a schema generator of its own: pydantic writes an optional field as `anyOf` with null, titles
every property and model, and puts nested models under `$defs`; some model providers refuse or
misread each of those (the MCP Inspector's strict mode lists them), so the schemas here name one
type a field (a field left out is not null), carry no titles and nest objects in place. And why a
sentence of its own for a bad argument: pydantic's "Input should be a valid integer" does not say
what to send, and the agent reading it acts on what it is told.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import mcp.types as types
from pydantic import BaseModel, ValidationError
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import ErrorDetails, core_schema

LENGTH = ("string_too_short", "string_too_long")  # a string argument's length out of its bounds
RANGE = ("greater_than_equal", "less_than_equal")  # a number argument out of its range
SHOWN_UP_TO = 10**12  # a number out of range is said back up to this size


class BadArguments(ValueError):
    """A call's arguments do not fit the tool's input schema; the message says what to send instead."""


@dataclass(frozen=True)
class Advice:
    """What to do about an argument out of its bounds, said after them (`Annotated` metadata of a
    field; never published: the schema's description says what the argument is)."""

    text: str


class PortableSchema(GenerateJsonSchema):
    """JSON Schema that reads the same on every model provider: one type a field, no titles, no
    description of a model's own (the tool's description says it), nested objects in place."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False

    def model_schema(self, schema: core_schema.ModelSchema) -> JsonSchemaValue:
        json_schema = super().model_schema(schema)
        json_schema.pop("title", None)
        json_schema.pop("description", None)  # a model's docstring is written for groundbot's readers
        return json_schema

    def nullable_schema(self, schema: core_schema.NullableSchema) -> JsonSchemaValue:
        """An optional field is its type alone: left out when it has no value, never null."""
        return self.generate_inner(schema["schema"])

    def default_schema(self, schema: core_schema.WithDefaultSchema) -> JsonSchemaValue:
        json_schema = super().default_schema(schema)
        if schema.get("default", ...) is None:  # an optional field's "default: null" says nothing more
            json_schema.pop("default", None)
        return json_schema

    def generate(self, schema: core_schema.CoreSchema, mode: Literal["validation", "serialization"] = "validation",
                 ) -> JsonSchemaValue:
        json_schema = super().generate(schema, mode)
        return _in_place(json_schema, json_schema.pop("$defs", {}))


def _in_place(node: Any, defs: Mapping[str, Any]) -> Any:
    """`node` with each `$ref` to `defs` replaced by the schema it names."""
    if isinstance(node, list):
        return [_in_place(item, defs) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        node = {**defs[node["$ref"].rsplit("/", 1)[-1]], **{k: v for k, v in node.items() if k != "$ref"}}
    return {key: _in_place(value, defs) for key, value in node.items()}


@functools.cache
def schema_of(model: type[BaseModel], mode: Literal["validation", "serialization"]) -> dict[str, Any]:
    """The portable JSON schema of `model`: what a call may send (validation) or what a result holds
    (serialization)."""
    return model.model_json_schema(schema_generator=PortableSchema, mode=mode)


@dataclass(frozen=True)
class Contract:
    """One tool as an agent reads it in `tools/list` and as groundbot checks a call of it."""

    name: str
    title: str
    description: str
    arguments: type[BaseModel]
    result: type[BaseModel]
    annotations: types.ToolAnnotations

    @property
    def input_schema(self) -> dict[str, Any]:
        return schema_of(self.arguments, "validation")

    @property
    def output_schema(self) -> dict[str, Any]:
        return schema_of(self.result, "serialization")

    def tool(self) -> types.Tool:
        return types.Tool(name=self.name, title=self.title, description=self.description,
                          input_schema=self.input_schema, output_schema=self.output_schema,
                          annotations=self.annotations)

    def parse(self, arguments: Mapping[str, Any]) -> Any:
        """The arguments of a call as the tool's arguments model; BadArguments, with one sentence
        that says what to send instead, when they do not fit it."""
        try:
            return self.arguments.model_validate(dict(arguments))
        except ValidationError as exc:
            errors = exc.errors()
            first = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])  # an unknown name first
            raise BadArguments(self.problem(first)) from None

    def problem(self, error: ErrorDetails) -> str:
        """A validation error as the sentence an agent acts on: the argument, what it must be and
        what it was (its kind, never its text: it may be long, or anything)."""
        name = str(error["loc"][0]) if error["loc"] else ""
        if error["type"] == "extra_forbidden":
            shown = name if len(name) <= 40 else name[:40] + "…"
            return f"{self.name} takes no argument {shown!r}; its arguments are {', '.join(self.arguments.model_fields)}"
        field, published = self.arguments.model_fields[name], self.input_schema["properties"][name]
        must = f"'{name}' " + ("is required and must be " if field.is_required() else "must be ") + _expected(published)
        if error["type"] == "missing":
            return must
        if error["type"] in LENGTH:
            advice = next((m.text for m in field.metadata if isinstance(m, Advice)), "")
            return f"'{name}' must be 1 to {published['maxLength']} characters" + (f": {advice}" if advice else "")
        if error["type"] in RANGE and isinstance(error["input"], int):
            return f"{must}; got {error['input'] if abs(error['input']) < SHOWN_UP_TO else 'a larger one'}"
        return f"{must}, not {kind_of(error['input'])}"


def _expected(published: Mapping[str, Any]) -> str:
    """What an argument must be, read from its published schema ("a whole number from 1 to 20")."""
    if published.get("type") == "integer":
        bounds = f" from {published['minimum']} to {published['maximum']}" if "minimum" in published else ""
        return "a whole number" + bounds
    named = {"string": "a string", "boolean": "true or false", "number": "a number"}
    return named.get(str(published.get("type")), "a JSON value")


def kind_of(value: Any) -> str:
    """A JSON value's type as an agent would name it (never the value: it may be long, or anything)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object" if isinstance(value, dict) else type(value).__name__
