"""`admission.k8s.io/v1` AdmissionReview, the request and response of a mutating webhook."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from apis.meta import KubeModel, KubeObject
from apis.names import NameRule

__all__ = [
    "AdmissionRequest",
    "AdmissionResponse",
    "AdmissionReview",
    "GroupVersionKind",
    "GroupVersionResource",
]


class GroupVersionKind(KubeModel):
    """group/version/kind of the object under review."""

    group: str
    version: str
    kind: str


class GroupVersionResource(KubeModel):
    """group/version/resource of the object under review."""

    group: str
    version: str
    resource: str


class AdmissionRequest(KubeModel):
    """What the API server asks the webhook about."""

    UNTYPED_FIELDS: ClassVar[frozenset[str]] = frozenset({"requestSubResource"})

    uid: str
    kind: GroupVersionKind
    resource: GroupVersionResource
    sub_resource: str | None = None
    request_kind: GroupVersionKind | None = None
    request_resource: GroupVersionResource | None = None
    name: str | None = None
    namespace: str | None = None
    operation: Literal["CREATE", "UPDATE", "DELETE", "CONNECT"]
    user_info: dict[str, Any] | None = None
    object: dict[str, Any] | None = None
    old_object: dict[str, Any] | None = None
    dry_run: bool | None = None
    options: dict[str, Any] | None = None


class AdmissionResponse(KubeModel):
    """The webhook's answer: allowed or not, and an optional base64 JSON patch."""

    uid: str
    allowed: bool
    status: dict[str, Any] | None = None
    patch: str | None = None
    patch_type: Literal["JSONPatch"] | None = None
    audit_annotations: dict[str, str] | None = None
    warnings: list[str] | None = None


class AdmissionReview(KubeObject):
    """The envelope of an admission request and its response."""

    GROUP: ClassVar[str] = "admission.k8s.io"
    KIND: ClassVar[str] = "AdmissionReview"
    PLURAL: ClassVar[str] = "admissionreviews"
    NAMESPACED: ClassVar[bool] = False
    # Never stored: an AdmissionReview carries no name.
    NAME_RULE: ClassVar[NameRule | None] = None

    request: AdmissionRequest | None = None
    response: AdmissionResponse | None = None
