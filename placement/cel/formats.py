"""The Kubernetes CEL format library's validators (`format.<name>().validate(text)`): each
returns the list of what is wrong with the text, in Kubernetes' words (empty: valid)."""

from __future__ import annotations

import re
from collections.abc import Callable
from urllib.parse import urlsplit

__all__ = ["FORMATS", "FORMAT_NAMES"]

_DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_DNS1035_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
_QUALIFIED = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _pattern_check(pattern: re.Pattern[str], limit: int, what: str) -> Callable[[str], list[str]]:
    def check(text: str) -> list[str]:
        errors = []
        if len(text) > limit:
            errors.append(f"must be no more than {limit} characters")
        if pattern.fullmatch(text) is None:
            errors.append(what)
        return errors

    return check


def _qualified_name(text: str) -> list[str]:
    prefix, _, name = text.rpartition("/")
    errors = []
    if prefix and _DNS1123_SUBDOMAIN.fullmatch(prefix) is None:
        errors.append("prefix part must be a DNS-1123 subdomain")
    if not name or len(name) > 63 or _QUALIFIED.fullmatch(name) is None:
        errors.append("name part must consist of alphanumeric characters, '-', '_' or '.'")
    return errors


_LABEL_WORDS = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character"
)
FORMATS: dict[str, Callable[[str], list[str]]] = {
    "dns1123Label": _pattern_check(_DNS1123_LABEL, 63, _LABEL_WORDS),
    "dns1123Subdomain": _pattern_check(
        _DNS1123_SUBDOMAIN,
        253,
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
        "'-' or '.', and must start and end with an alphanumeric character",
    ),
    "dns1035Label": _pattern_check(
        _DNS1035_LABEL,
        63,
        "a DNS-1035 label must consist of lower case alphanumeric characters "
        "or '-', start with an alphabetic character, and end with an alphanumeric character",
    ),
    "qualifiedName": _qualified_name,
    "labelValue": _pattern_check(
        _LABEL_VALUE,
        63,
        "a valid label must be an empty string or consist of alphanumeric "
        "characters, '-', '_' or '.', and must start and end with an alphanumeric character",
    ),
    "uri": lambda text: [] if urlsplit(text).scheme or text.startswith("/") else ["invalid URI"],
    "uuid": _pattern_check(_UUID, 36, "invalid UUID"),
    "byte": lambda text: (
        []
        if re.fullmatch(r"[A-Za-z0-9+/]*={0,2}", text) and len(text) % 4 == 0
        else ["invalid base64"]
    ),
    "date": lambda text: [] if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text) else ["invalid date"],
    "datetime": lambda text: (
        []
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})", text)
        else ["invalid datetime"]
    ),
}
FORMATS["dns1123LabelPrefix"] = FORMATS["dns1123Label"]
FORMATS["dns1123SubdomainPrefix"] = FORMATS["dns1123Subdomain"]
FORMATS["dns1035LabelPrefix"] = FORMATS["dns1035Label"]
FORMATS["labelValue"] = FORMATS["labelValue"]
FORMAT_NAMES = frozenset(FORMATS)
