"""AdmissionReview `admission.k8s.io/v1`: read the API server's request, write the response.

Field names follow `k8s.io/api/admission/v1/types.go` (AdmissionReview, AdmissionRequest,
AdmissionResponse). Only what the webhook needs is read, and every field is type-checked:
a review that is not one is a `BadReview` with a one-line reason (HTTP 400), never an exception
from deep inside.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

API_VERSION = "admission.k8s.io/v1"
KIND = "AdmissionReview"


class BadReview(ValueError):
    """The body is not a usable AdmissionReview; `reason` is a short machine-readable tag for
    metrics, the message a sentence for the client."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class AdmissionRequest:
    uid: str
    group: str
    version: str
    kind: str
    operation: str                 # CREATE | UPDATE | DELETE | CONNECT
    namespace: str
    name: str                      # request.name, else metadata.name, else generateName + "*"
    sub_resource: str
    dry_run: bool
    object: Any                    # None on DELETE
    old_object: Any                # None except on UPDATE (and DELETE)
    user: str = ""                 # userInfo.username: who asked (for the access log)


def parse_review(body: Any) -> AdmissionRequest:
    """The request inside a decoded AdmissionReview, or BadReview."""
    if not isinstance(body, dict):
        raise BadReview("not-admission-review", f"body is a JSON {_json_type(body)}, not an AdmissionReview object")
    if body.get("kind") != KIND:
        raise BadReview("not-admission-review", f"kind is {body.get('kind')!r}, expected {KIND!r}")
    if body.get("apiVersion") != API_VERSION:
        raise BadReview("wrong-api-version",
                        f"apiVersion {body.get('apiVersion')!r} is not supported; send {API_VERSION!r} "
                        "(admissionReviewVersions: [v1])")
    request = body.get("request")
    if not isinstance(request, dict):
        raise BadReview("no-request", "request is missing or not an object")
    uid = request.get("uid")
    if not isinstance(uid, str) or not uid:
        raise BadReview("no-uid", "request.uid is missing or not a non-empty string")
    gvk = request.get("kind")
    if not isinstance(gvk, dict) or not all(isinstance(gvk.get(k), str) for k in ("group", "version", "kind")):
        raise BadReview("bad-kind", "request.kind must be an object with string group, version and kind")
    operation = request.get("operation")
    if operation not in ("CREATE", "UPDATE", "DELETE", "CONNECT"):
        raise BadReview("bad-operation", f"request.operation {operation!r} is not CREATE, UPDATE, DELETE or CONNECT")
    for key in ("namespace", "name", "subResource"):
        if request.get(key) is not None and not isinstance(request.get(key), str):
            raise BadReview("bad-field", f"request.{key} must be a string")
    dry_run = request.get("dryRun", False)
    if not isinstance(dry_run, bool):
        raise BadReview("bad-field", "request.dryRun must be a boolean")
    obj = request.get("object")
    return AdmissionRequest(
        uid=uid, group=gvk["group"], version=gvk["version"], kind=gvk["kind"], operation=operation,
        namespace=request.get("namespace") or "", name=request.get("name") or _object_name(obj),
        sub_resource=request.get("subResource") or "", dry_run=dry_run, object=obj,
        old_object=request.get("oldObject"), user=_username(request.get("userInfo")))


def review_response(uid: str, allowed: bool, *, code: int | None = None, message: str | None = None,
                    warnings: list[str] | None = None,
                    audit_annotations: dict[str, str] | None = None) -> dict[str, Any]:
    """The AdmissionReview the API server expects back (same apiVersion, the request's uid).
    `audit_annotations`: keys are the name part of a qualified name; the API server puts the
    webhook's name before them (`validate.numaguard.io/replica-of`) and records them in its
    audit log (k8s.io/apiserver pkg/admission/attributes.go `checkKeyFormat`)."""
    response: dict[str, Any] = {"uid": uid, "allowed": allowed}
    if not allowed:
        response["status"] = {"code": code or 403, "reason": "Forbidden", "message": message or ""}
    if warnings:
        response["warnings"] = warnings
    if audit_annotations:
        response["auditAnnotations"] = audit_annotations
    return {"apiVersion": API_VERSION, "kind": KIND, "response": response}


def _object_name(obj: Any) -> str:
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    if not isinstance(meta, dict):
        return ""
    if isinstance(meta.get("name"), str) and meta["name"]:
        return meta["name"]
    generate = meta.get("generateName")
    return f"{generate}*" if isinstance(generate, str) and generate else ""


def _username(user_info: Any) -> str:
    name = user_info.get("username") if isinstance(user_info, dict) else None
    return name if isinstance(name, str) else ""


def _json_type(value: Any) -> str:
    return {list: "array", str: "string", bool: "boolean", int: "number", float: "number",
            type(None): "null"}.get(type(value), type(value).__name__)
