"""Validate an object against a CustomResourceDefinition's openAPIV3Schema as `kubectl apply`
(field validation Strict, the default since Kubernetes 1.27) would: the schema's types, enums,
patterns and required fields (jsonschema), and no field the schema does not declare, except
under `x-kubernetes-preserve-unknown-fields`."""
from __future__ import annotations

import copy
from pathlib import Path

import jsonschema
import yaml


def _strict(schema: dict) -> dict:
    """Unknown fields refused wherever the schema lists properties and does not preserve them."""
    if isinstance(schema, dict):
        if ("properties" in schema and "additionalProperties" not in schema
                and not schema.get("x-kubernetes-preserve-unknown-fields")):
            schema["additionalProperties"] = False
        for value in schema.values():
            if isinstance(value, dict):
                _strict(value)
            elif isinstance(value, list):
                for item in value:
                    _strict(item)
    return schema


def crd_errors(obj: dict, crd_path: Path) -> list[str]:
    """Each problem as "path: message"; empty when the object is valid for its version."""
    crd = yaml.safe_load(crd_path.read_text())
    group, version = obj["apiVersion"].split("/")
    assert group == crd["spec"]["group"] and obj["kind"] == crd["spec"]["names"]["kind"]
    [served] = [v for v in crd["spec"]["versions"] if v["name"] == version]
    schema = _strict(copy.deepcopy(served["schema"]["openAPIV3Schema"]))
    schema["properties"]["metadata"] = {"type": "object"}
    return [f"{'.'.join(map(str, e.absolute_path))}: {e.message}"
            for e in jsonschema.Draft7Validator(schema).iter_errors(obj)]
