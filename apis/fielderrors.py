"""Field errors worded as Kubernetes' Go code words them, for messages users compare with OCM's.

OCM builds its selectors with apimachinery (`metav1.LabelSelectorAsSelector` ->
`labels.NewRequirement`), and a Misconfigured condition carries that error text verbatim:
`values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty`. The
pieces reproduced here, as in apimachinery v0.36 (the version OCM builds with):

* `go_value`: how `field.Invalid` renders the bad value: strings Go-quoted (`%q`), numbers and
  booleans plain, everything else as Go's `json.Marshal` writes it (a nil list is `null`, a
  list `["a","b"]` without spaces, `<`, `>` and `&` escaped as `\\u003c`...).
* `invalid`: `<path>: Invalid value: <value>: <detail>`.
* `aggregate`: `utilerrors.NewAggregate(...).Error()`: one message alone, several as
  `[m1, m2]`, duplicates dropped.
* `label_key_problems` / `label_value_problems`: `content.IsLabelKey` / `content.IsLabelValue`
  (their lengths in bytes, as v0.36 words them).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

__all__ = [
    "aggregate",
    "go_quote",
    "go_value",
    "invalid",
    "label_key_problems",
    "label_value_problems",
]

_LABEL_KEY_CHAR = "[A-Za-z0-9]"
_LABEL_KEY_EXT_CHAR = "[-A-Za-z0-9_.]"
_LABEL_KEY_FMT = f"({_LABEL_KEY_CHAR}{_LABEL_KEY_EXT_CHAR}*)?{_LABEL_KEY_CHAR}"
_LABEL_KEY_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character"
)
_LABEL_NAME_MAX = 63
_LABEL_VALUE_FMT = f"({_LABEL_KEY_FMT})?"
_LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character"
)
_LABEL_VALUE_MAX = 63
_DNS_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS_SUBDOMAIN_FMT = _DNS_LABEL_FMT + r"(\." + _DNS_LABEL_FMT + ")*"
_DNS_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character"
)
_DNS_SUBDOMAIN_MAX = 253

# fullmatch, not `$`: Python's `$` also matches before a trailing newline, Go's does not.
_LABEL_KEY_RE = re.compile(_LABEL_KEY_FMT)
_LABEL_VALUE_RE = re.compile(_LABEL_VALUE_FMT)
_DNS_SUBDOMAIN_RE = re.compile(_DNS_SUBDOMAIN_FMT)

# Go's json.Marshal escapes these for safe embedding in HTML; the rest is plain JSON.
_HTML_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028"}
_HTML_ESCAPES["\u2029"] = "\\u2029"
_HTML_RE = re.compile("[<>&\u2028\u2029]")


_GO_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\n": "\\n",
    "\t": "\\t",
    "\r": "\\r",
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\v": "\\v",
}


def _go_char(char: str) -> str:
    escaped = _GO_ESCAPES.get(char)
    if escaped is not None:
        return escaped
    code = ord(char)
    if code < 0x20 or code == 0x7F:
        return f"\\x{code:02x}"
    if char != " " and not char.isprintable():
        return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"
    return char


def go_quote(text: str) -> str:
    """Go's `%q` of a string (`strconv.Quote`): printable characters as they are, the usual
    backslash escapes, other control characters as `\\x..` or `\\u....`."""
    return '"' + "".join(_go_char(char) for char in text) + '"'


def _go_json(value: object) -> str:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return _HTML_RE.sub(lambda m: _HTML_ESCAPES[m.group(0)], text)


def go_value(value: object) -> str:
    """A bad value as `field.Error.ErrorBody` prints it (`None` is Go's nil: `null`)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        return go_quote(value)
    return _go_json(value)


def invalid(path: str, value: object, detail: str) -> str:
    """`field.Invalid(path, value, detail).Error()`."""
    return f"{path}: Invalid value: {go_value(value)}: {detail}"


def aggregate(messages: Iterable[str]) -> str | None:
    """`utilerrors.NewAggregate(errs).Error()`; None when there is no message."""
    seen: list[str] = []
    for message in messages:
        if message not in seen:
            seen.append(message)
    if not seen:
        return None
    if len(seen) == 1:
        return seen[0]
    return "[" + ", ".join(seen) + "]"


def _regex_error(message: str, fmt: str, *examples: str) -> str:
    shown = "".join(f"{' or ' if i else ''}'{example}', " for i, example in enumerate(examples))
    return f"{message} (e.g. {shown}regex used for validation is '{fmt}')"


def _max_len(limit: int) -> str:
    return f"must be no more than {limit} bytes"


def _subdomain_problems(value: str) -> list[str]:
    problems = []
    if len(value.encode()) > _DNS_SUBDOMAIN_MAX:
        problems.append(_max_len(_DNS_SUBDOMAIN_MAX))
    if not _DNS_SUBDOMAIN_RE.fullmatch(value):
        problems.append(_regex_error(_DNS_SUBDOMAIN_MSG, _DNS_SUBDOMAIN_FMT, "example.com"))
    return problems


def label_key_problems(key: str) -> list[str]:
    """What makes `key` no label key (a qualified name with an optional DNS-subdomain prefix);
    empty when it is one."""
    parts = key.split("/")
    problems: list[str] = []
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            problems.append("prefix part must be non-empty")
        else:
            problems.extend("prefix part " + p for p in _subdomain_problems(prefix))
    else:
        example = _regex_error(_LABEL_KEY_MSG, _LABEL_KEY_FMT, "MyName", "my.name", "123-abc")
        return [
            f"a valid label key {example} with an optional DNS subdomain prefix and '/' "
            "(e.g. 'example.com/MyName')"
        ]
    if not name:
        problems.append("name part must be non-empty")
    elif len(name.encode()) > _LABEL_NAME_MAX:
        problems.append("name part " + _max_len(_LABEL_NAME_MAX))
    if not _LABEL_KEY_RE.fullmatch(name):
        problems.append(
            "name part "
            + _regex_error(_LABEL_KEY_MSG, _LABEL_KEY_FMT, "MyName", "my.name", "123-abc")
        )
    return problems


def label_value_problems(value: str) -> list[str]:
    """What makes `value` no label value; empty when it is one."""
    problems = []
    if len(value.encode()) > _LABEL_VALUE_MAX:
        problems.append(_max_len(_LABEL_VALUE_MAX))
    if not _LABEL_VALUE_RE.fullmatch(value):
        problems.append(
            _regex_error(_LABEL_VALUE_MSG, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345")
        )
    return problems
