"""kube-apiserver's validation of a pod's use of ResourceClaims (pkg/apis/core/validation, v1.36),
in kube's words:

* `spec.resourceClaims` (checked before the containers): each entry named by a DNS label, no
  name twice (`spec.resourceClaims[1].name: Duplicate value: "gpu"`), and exactly one of
  `resourceClaimName` or `resourceClaimTemplateName` (the entry shown as Go prints it), each a
  DNS subdomain;
* a container's `resources.claims` (after its limits and requests): a name, each
  `name/request` once, naming an entry of `spec.resourceClaims` (`Not found: "x": must be one
  of the names in pod.spec.resourceClaims: a, b`), a request a DNS label.
"""

from __future__ import annotations

from typing import Any

from apis.errors import FieldProblem
from apis.fielderrors import go_value
from apis.fieldrules import as_dict, duplicate, invalid, required
from apis.names import dns1123_label_problems, dns1123_subdomain_problems

__all__ = ["container_claim_problems", "pod_claim_names", "pod_claim_problems"]


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _optional(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def pod_claim_names(claims: list[Any]) -> set[str]:
    """The names of the pod's `spec.resourceClaims` (the empty one left out)."""
    return {name for c in claims if (name := _text(as_dict(c).get("name")))}


def pod_claim_problems(claims: list[Any], path: str = "spec.resourceClaims") -> list[FieldProblem]:
    """A pod's `spec.resourceClaims`."""
    problems: list[FieldProblem] = []
    seen: set[str] = set()
    for i, raw in enumerate(claims):
        claim, at = as_dict(raw), f"{path}[{i}]"
        name = _text(claim.get("name"))
        if not name:
            problems.append(required(f"{at}.name"))
        elif name in seen:
            problems.append(duplicate(f"{at}.name", name))
        else:
            problems += [invalid(f"{at}.name", name, m) for m in dns1123_label_problems(name)]
            seen.add(name)
        by_name = _optional(claim.get("resourceClaimName"))
        by_template = _optional(claim.get("resourceClaimTemplateName"))
        shown = {
            "Name": name,
            "ResourceClaimName": by_name,
            "ResourceClaimTemplateName": by_template,
        }
        if by_name is not None and by_template is not None:
            detail = (
                "at most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified"
            )
            problems.append(invalid(at, shown, detail))
        if by_name is None and by_template is None:
            detail = "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`"
            problems.append(invalid(at, shown, detail))
        for field, value in (
            ("resourceClaimName", by_name),
            ("resourceClaimTemplateName", by_template),
        ):
            if value is not None:
                messages = dns1123_subdomain_problems(value)
                problems += [invalid(f"{at}.{field}", value, m) for m in messages]
    return problems


def container_claim_problems(claims: list[Any], names: set[str], path: str) -> list[FieldProblem]:
    """A container's `resources.claims` under `path`, `names` the pod's claim names."""
    problems: list[FieldProblem] = []
    seen: set[str] = set()
    for i, raw in enumerate(claims):
        claim, at = as_dict(raw), f"{path}[{i}]"
        name = _text(claim.get("name"))
        if not name:
            problems.append(required(at))
            continue
        request = _text(claim.get("request"))
        key = f"{name}/{request}" if request else name
        if key in seen:
            problems.append(duplicate(at, key))
        seen.add(key)
        if name not in names:
            known = ": " + ", ".join(sorted(names)) if names else " which is empty"
            detail = f"must be one of the names in pod.spec.resourceClaims{known}"
            problems.append(FieldProblem(at, f"Not found: {go_value(name)}: {detail}"))
        if request:
            messages = dns1123_label_problems(request)
            problems += [invalid(f"{at}.request", request, m) for m in messages]
    return problems
