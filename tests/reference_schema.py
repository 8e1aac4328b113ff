"""The reference validator: python-jsonschema over the shipped schemas.

gitst validates with jsonschema-rs (and, for a few records, schemas compiled to Python); the
differential tests hold every verdict of those equal to python-jsonschema's, the reference
implementation of JSON Schema 2020-12. Only the tests and benchmarks need it, so jsonschema is
a test dependency (docs/decisions.md, "Python and dependencies")."""

from __future__ import annotations

import functools
from typing import Any

import jsonschema
import referencing
import referencing.jsonschema

from gitst.schemas.catalog import SCHEMA_BASE, SUFFIX, SchemaError, _all_schemas, load


class ReferenceValidator:
    def __init__(self, name: str) -> None:
        resources = [
            (
                schema.get("$id", SCHEMA_BASE + n + SUFFIX),
                referencing.Resource.from_contents(schema, default_specification=referencing.jsonschema.DRAFT202012),
            )
            for n, schema in _all_schemas().items()
        ]
        registry = referencing.Registry().with_resources(resources)
        self.name = name
        self._v = jsonschema.Draft202012Validator(load(name), registry=registry)

    def is_valid(self, instance: Any) -> bool:
        return self._v.is_valid(instance)

    def errors(self, instance: Any) -> list[SchemaError]:
        return [SchemaError(tuple(e.absolute_path), e.message) for e in self._v.iter_errors(instance)]


@functools.cache
def reference_validator(name: str) -> ReferenceValidator:
    return ReferenceValidator(name)
