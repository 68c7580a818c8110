"""A CustomResourceDefinition's structural schema as a JSON Schema, to validate objects as the
API server does with strict field validation (kubectl's default since 1.27): an unknown field
is an error unless the schema preserves unknown fields (x-kubernetes-preserve-unknown-fields)
or takes any keys (additionalProperties); `nullable` admits null; x-kubernetes-int-or-string
admits both (apiextensions-apiserver pkg/apiserver/schema: structural schemas, pruning and the
OpenAPI v3 validation it runs through kube-openapi). CEL rules (x-kubernetes-validations) are
not evaluated here: the two in these CRDs are an immutability check on update and a Gateway
backendRef rule, neither of which a create of these objects can meet."""
from __future__ import annotations

from pathlib import Path

import jsonschema
import yaml


def json_schema(node):
    if isinstance(node, list):
        return [json_schema(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {k: json_schema(v) for k, v in node.items() if not k.startswith("x-kubernetes-") and k != "nullable"}
    if node.get("nullable") and "type" in out:
        out["type"] = [out["type"], "null"]
    if node.get("x-kubernetes-int-or-string") and "anyOf" not in out:
        out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    if (out.get("type") == "object" and "properties" in out and "additionalProperties" not in out
            and not node.get("x-kubernetes-preserve-unknown-fields")):
        out["additionalProperties"] = False
    return out


def validators(*crd_files: Path) -> dict[tuple[str, str], jsonschema.Draft7Validator]:
    """(apiVersion, kind) -> a validator, for every served version of every CRD in the files."""
    out = {}
    for path in crd_files:
        for crd in yaml.safe_load_all(path.read_text()):
            if not crd or crd.get("kind") != "CustomResourceDefinition":
                continue
            spec = crd["spec"]
            for version in spec["versions"]:
                if version.get("served"):
                    schema = json_schema(version["schema"]["openAPIV3Schema"])
                    out[(f"{spec['group']}/{version['name']}", spec["names"]["kind"])] = jsonschema.Draft7Validator(schema)
    return out


def errors(validator_table, obj: dict) -> list[str]:
    validator = validator_table[(obj["apiVersion"], obj["kind"])]
    return sorted(f"{'.'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}" for e in validator.iter_errors(obj))
