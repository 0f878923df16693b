"""`admissionregistration.k8s.io/v1` MutatingWebhookConfiguration: which requests an API server
sends to which mutating webhook, and what it does when the webhook fails.

The spot webhook ships one (config/addons/spot-webhook) and the embedded API server honours
them (controllers/embedded/webhooks.py), so the models carry the v1 API's own rules: the enums,
`timeoutSeconds` in 1..30, `sideEffects` required and limited to `None`/`NoneOnDryRun` (v1
refuses `Some` and `Unknown`), one of `url` or `service` in `clientConfig`. Defaults are the
API's (`failurePolicy: Fail`, `matchPolicy: Equivalent`, `timeoutSeconds: 10`,
`reinvocationPolicy: Never`, port 443); `effective_*` read them where a field is unset, as the
API server would have filled it in.
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field, model_validator

from apis.meta import IntRange, KubeModel, KubeObject, LabelSelector, field_error

__all__ = [
    "DEFAULT_TIMEOUT_SECONDS",
    "MutatingWebhook",
    "MutatingWebhookConfiguration",
    "RuleWithOperations",
    "ServiceReference",
    "WebhookClientConfig",
]

DEFAULT_TIMEOUT_SECONDS = 10

Operation = Literal["CREATE", "UPDATE", "DELETE", "CONNECT", "*"]


class RuleWithOperations(KubeModel):
    """Operations on resources of API groups and versions; `*` matches any, `pods/*` any
    subresource of pods. `scope`: `Cluster`, `Namespaced` or `*` (the default)."""

    operations: list[Operation] | None = None
    api_groups: list[str] | None = None
    api_versions: list[str] | None = None
    resources: list[str] | None = None
    scope: Literal["Cluster", "Namespaced", "*"] | None = None


class ServiceReference(KubeModel):
    """A Service in the cluster that serves the webhook (HTTPS, `<name>.<namespace>.svc`)."""

    namespace: str
    name: str
    path: str | None = None
    port: Annotated[int, IntRange(1, 65535)] | None = None


class WebhookClientConfig(KubeModel):
    """Where the webhook is (`url` or `service`) and the PEM CA bundle, base64 on the wire,
    that verifies its serving certificate (empty: the API server's own trust roots)."""

    url: str | None = None
    service: ServiceReference | None = None
    ca_bundle: str | None = None

    @model_validator(mode="after")
    def _one_target(self) -> WebhookClientConfig:
        if (self.url is None) == (self.service is None):
            message = "exactly one of url or service is required"
            raise field_error(self, [((), None, message)])
        if self.url is not None and not self.url.startswith("https://"):
            raise field_error(self, [(("url",), self.url, "'https' is the only allowed scheme")])
        return self


class MutatingWebhook(KubeModel):
    """One webhook of a configuration: its client config, which requests it sees, and how the
    API server reacts when it fails or changes the object."""

    UNTYPED_FIELDS: ClassVar[frozenset[str]] = frozenset({"matchConditions"})

    name: Annotated[str, Field(min_length=1)]
    client_config: WebhookClientConfig
    rules: list[RuleWithOperations] | None = None
    failure_policy: Literal["Ignore", "Fail"] | None = None
    match_policy: Literal["Exact", "Equivalent"] | None = None
    namespace_selector: LabelSelector | None = None
    object_selector: LabelSelector | None = None
    side_effects: Literal["None", "NoneOnDryRun"]
    timeout_seconds: Annotated[int, IntRange(1, 30)] | None = None
    admission_review_versions: Annotated[list[str], Field(min_length=1)]
    reinvocation_policy: Literal["Never", "IfNeeded"] | None = None

    @property
    def effective_failure_policy(self) -> Literal["Ignore", "Fail"]:
        return self.failure_policy or "Fail"

    @property
    def effective_timeout(self) -> int:
        return self.timeout_seconds or DEFAULT_TIMEOUT_SECONDS

    @property
    def effective_match_policy(self) -> Literal["Exact", "Equivalent"]:
        return self.match_policy or "Equivalent"


class MutatingWebhookConfiguration(KubeObject):
    """admissionregistration.k8s.io/v1 MutatingWebhookConfiguration (cluster-scoped)."""

    GROUP: ClassVar[str] = "admissionregistration.k8s.io"
    KIND: ClassVar[str] = "MutatingWebhookConfiguration"
    PLURAL: ClassVar[str] = "mutatingwebhookconfigurations"
    NAMESPACED: ClassVar[bool] = False

    webhooks: list[MutatingWebhook] | None = None
