"""Object names as Kubernetes validates them: DNS-1123 labels and subdomains, with the API
server's own messages (`a lowercase RFC 1123 subdomain must consist of ...`).

Most kinds take a DNS-1123 subdomain as name (every custom resource, Pod, Node, Lease, Event);
Namespaces take a DNS-1123 label, and so do ManagedClusters (OCM's webhook: a cluster's name is
also the name of its namespace on the hub). `metadata.namespace` is always a label.
`generateName` is checked as a prefix: a trailing `-` is allowed, the server appends a suffix.
"""

from __future__ import annotations

import json
import re
from typing import Literal

__all__ = [
    "DNS1123_LABEL_MAX_LENGTH",
    "DNS1123_SUBDOMAIN_MAX_LENGTH",
    "NameRule",
    "dns1035_label_problems",
    "dns1123_label_problems",
    "dns1123_subdomain_problems",
    "invalid_value",
    "name_problems",
]

NameRule = Literal["label", "subdomain", "dns1035"]
"""DNS-1123 label, DNS-1123 subdomain, or DNS-1035 label (a Service's name)."""

DNS1123_LABEL_MAX_LENGTH = 63
DNS1123_SUBDOMAIN_MAX_LENGTH = 253

_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN_FMT = _LABEL_FMT + r"(\." + _LABEL_FMT + ")*"
_LABEL_RE = re.compile(f"^{_LABEL_FMT}$")
_SUBDOMAIN_RE = re.compile(f"^{_SUBDOMAIN_FMT}$")

# The texts of k8s.io/apimachinery/pkg/util/validation, so that a message reads as kubectl's.
_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character"
)
_DNS1035_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
_DNS1035_RE = re.compile(f"^{_DNS1035_FMT}$")
_DNS1035_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character"
)
_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character"
)


def _max_length(limit: int) -> str:
    return f"must be no more than {limit} characters"


def _regex_error(message: str, fmt: str, *examples: str) -> str:
    shown = "".join(f"{' or ' if i else ''}'{example}', " for i, example in enumerate(examples))
    return f"{message} (e.g. {shown}regex used for validation is '{fmt}')"


def dns1123_label_problems(value: str) -> list[str]:
    """What makes `value` no DNS-1123 label (empty when it is one)."""
    problems = []
    if len(value) > DNS1123_LABEL_MAX_LENGTH:
        problems.append(_max_length(DNS1123_LABEL_MAX_LENGTH))
    if not _LABEL_RE.match(value):
        if _SUBDOMAIN_RE.match(value):
            problems.append("must not contain dots")
        else:
            problems.append(_regex_error(_LABEL_MSG, _LABEL_FMT, "my-name", "123-abc"))
    return problems


def dns1035_label_problems(value: str) -> list[str]:
    """What makes `value` no DNS-1035 label, as a Service's name must be (empty when it is
    one)."""
    problems = []
    if len(value) > DNS1123_LABEL_MAX_LENGTH:
        problems.append(_max_length(DNS1123_LABEL_MAX_LENGTH))
    if not _DNS1035_RE.match(value):
        problems.append(_regex_error(_DNS1035_MSG, _DNS1035_FMT, "my-name", "abc-123"))
    return problems


def dns1123_subdomain_problems(value: str) -> list[str]:
    """What makes `value` no DNS-1123 subdomain (empty when it is one)."""
    problems = []
    if len(value) > DNS1123_SUBDOMAIN_MAX_LENGTH:
        problems.append(_max_length(DNS1123_SUBDOMAIN_MAX_LENGTH))
    if not _SUBDOMAIN_RE.match(value):
        problems.append(_regex_error(_SUBDOMAIN_MSG, _SUBDOMAIN_FMT, "example.com"))
    return problems


def name_problems(value: str, rule: NameRule, prefix: bool = False) -> list[str]:
    """What makes `value` an invalid name under `rule`; `prefix` for `generateName`, whose
    trailing `-` is fine (the server appends random characters)."""
    if prefix and len(value) > 1 and value.endswith("-"):
        # As Kubernetes' maskTrailingDash, quirk included: the last two characters become "a".
        value = value[:-2] + "a"
    if rule == "label":
        return dns1123_label_problems(value)
    if rule == "dns1035":
        return dns1035_label_problems(value)
    return dns1123_subdomain_problems(value)


def invalid_value(value: str, reason: str) -> str:
    """The API server's wording of a bad value: `Invalid value: "Bad_Name": <reason>`."""
    return f"Invalid value: {json.dumps(value)}: {reason}"
