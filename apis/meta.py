"""Base model, object metadata and the small shared types of the Kubernetes API (metav1).

Every wire model derives from `KubeModel`: camelCase aliases, strict types (the API server does
not turn "5" into 5 either), unknown fields kept and written back unchanged, so that reading an
object written by a newer version of an API and writing it back loses nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    GetCoreSchemaHandler,
    GetJsonSchemaHandler,
    PlainSerializer,
    PlainValidator,
    ValidationError,
    WithJsonSchema,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import InitErrorDetails, PydanticCustomError, core_schema

from apis.names import NameRule, invalid_value, name_problems

__all__ = [
    "LABEL_KEY_PATTERN",
    "QUALIFIED_NAME_PATTERN",
    "Condition",
    "ConditionStatus",
    "Int32",
    "Int64",
    "IntRange",
    "KubeModel",
    "KubeObject",
    "LabelSelector",
    "LabelSelectorRequirement",
    "MicroTime",
    "ObjectMeta",
    "OwnerReference",
    "SelectorOperator",
    "Time",
    "field_error",
    "format_time",
    "parse_time",
    "without_nulls",
]

# A Kubernetes qualified name with an optional DNS-subdomain prefix: the CRD pattern of taint
# keys, toleration keys and condition types.
QUALIFIED_NAME_PATTERN = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
)
LABEL_KEY_PATTERN = QUALIFIED_NAME_PATTERN
_LABEL_KEY_RE = re.compile(LABEL_KEY_PATTERN)
_LABEL_VALUE_RE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_MAX_LABEL_NAME = 63
_MAX_LABEL_PREFIX = 253


class KubeModel(BaseModel):
    """Base of every wire model: camelCase on the wire, strict types, unknown fields kept."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        strict=True,
        extra="allow",
        validate_default=False,
    )

    # Wire fields of the API type that the model keeps as they came, without typing them (their
    # contents are not checked for unknown fields). See apis.fields.
    UNTYPED_FIELDS: ClassVar[frozenset[str]] = frozenset()
    # False for a model typing only a subset of a large Kubernetes type: any other field is
    # accepted there without a check.
    ALL_FIELDS_KNOWN: ClassVar[bool] = True

    def to_wire(self) -> dict[str, Any]:
        """The object as the API server would store it: aliases, only the fields that were set."""
        return self.model_dump(by_alias=True, exclude_unset=True, mode="json")


# --- integers with ranges --------------------------------------------------------------------


# The range of each integer format of the OpenAPI schemas (Go's int32 and int64).
_FORMAT_RANGES: dict[str, tuple[int, int]] = {
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
}


@dataclass(frozen=True)
class IntRange:
    """Annotated metadata limiting an integer to [lo, hi], with an error naming both bounds.

    `Annotated[int, IntRange(-10, 10)]` validates like the CRD markers `minimum`/`maximum` and
    puts them (with the integer format) into the JSON schema the CRDs are generated from. The
    format's range (`int32` unless told) is enforced too: Go would refuse to decode a larger
    value, so an object holding one could never be read by OCM or a typed client.
    """

    lo: int | None = None
    hi: int | None = None
    fmt: str = "int32"

    def _check(self, value: Any) -> Any:
        if isinstance(value, int) and not isinstance(value, bool):
            lo, hi = self.lo, self.hi
            if (lo is not None and value < lo) or (hi is not None and value > hi):
                if lo is not None and hi is not None:
                    msg = "must be between {lo} and {hi} (got {got})"
                elif lo is not None:
                    msg = "must be at least {lo} (got {got})"
                else:
                    msg = "must be at most {hi} (got {got})"
                raise PydanticCustomError(
                    "int_range", msg, {"lo": lo, "hi": hi, "got": repr(value)}
                )
            # The format's own range, which Go's decoding enforces (a value beyond it never
            # reaches OCM's code); not put in the schema, as the CRDs carry only the format.
            bounds = _FORMAT_RANGES.get(self.fmt)
            if bounds is not None and not bounds[0] <= value <= bounds[1]:
                lo = bounds[0] if lo is None else max(lo, bounds[0])
                hi = bounds[1] if hi is None else min(hi, bounds[1])
                raise PydanticCustomError(
                    "int_range",
                    "must be between {lo} and {hi}, within the {fmt} range (got {got})",
                    {"lo": lo, "hi": hi, "fmt": self.fmt, "got": repr(value)},
                )
        return value

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        return core_schema.no_info_before_validator_function(self._check, handler(source))

    def __get_pydantic_json_schema__(
        self, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        json_schema = handler(schema)
        json_schema["format"] = self.fmt
        if self.lo is not None:
            json_schema["minimum"] = self.lo
        if self.hi is not None:
            json_schema["maximum"] = self.hi
        return json_schema


Int32 = Annotated[int, IntRange(fmt="int32")]
Int64 = Annotated[int, IntRange(fmt="int64")]


# --- time --------------------------------------------------------------------------------------


def parse_time(value: Any) -> datetime:
    """Parse an RFC 3339 timestamp (metav1.Time or MicroTime) into an aware UTC datetime."""
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, str):
        text = value.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        if "T" in text or "t" in text:
            try:
                parsed = datetime.fromisoformat(text)
            except ValueError:
                pass
            else:
                if parsed.tzinfo is not None:
                    return parsed.astimezone(UTC)
    raise PydanticCustomError(
        "rfc3339", "is not a valid RFC 3339 time (got {got})", {"got": repr(value)}
    )


def format_time(value: datetime) -> str:
    """Format as metav1.Time does: UTC, seconds precision, `Z` suffix."""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _format_micro_time(value: datetime) -> str:
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


Time = Annotated[
    datetime,
    PlainValidator(parse_time),
    PlainSerializer(format_time, return_type=str),
    WithJsonSchema({"type": "string", "format": "date-time"}),
]
MicroTime = Annotated[
    datetime,
    PlainValidator(parse_time),
    PlainSerializer(_format_micro_time, return_type=str),
    WithJsonSchema({"type": "string", "format": "date-time"}),
]


# --- labels ------------------------------------------------------------------------------------


def _label_key_problem(key: str) -> str | None:
    prefix, _, name = key.rpartition("/")
    if not _LABEL_KEY_RE.match(key) or len(name) > _MAX_LABEL_NAME:
        return f"invalid label key {key!r}"
    if len(prefix) > _MAX_LABEL_PREFIX:
        return f"invalid label key {key!r}: prefix longer than {_MAX_LABEL_PREFIX}"
    return None


def _check_labels(value: Any) -> Any:
    if isinstance(value, dict):
        for key, val in value.items():
            if not isinstance(key, str) or not isinstance(val, str):
                continue  # the dict[str, str] schema reports the type error
            problem = _label_key_problem(key)
            if problem is None and (len(val) > _MAX_LABEL_NAME or not _LABEL_VALUE_RE.match(val)):
                problem = f"invalid label value {val!r} for key {key!r}"
            if problem:
                raise PydanticCustomError("label", problem)
    return value


Labels = Annotated[dict[str, str], BeforeValidator(_check_labels)]


# --- metadata ----------------------------------------------------------------------------------


class OwnerReference(KubeModel):
    """A link to the object that owns this one; `controller: true` marks the managing owner."""

    api_version: str
    kind: str
    name: str
    uid: str
    controller: bool | None = None
    block_owner_deletion: bool | None = None


class ObjectMeta(KubeModel):
    """metav1.ObjectMeta: the fields the project reads or writes; the rest is kept as is."""

    UNTYPED_FIELDS: ClassVar[frozenset[str]] = frozenset({"selfLink", "managedFields"})

    name: str | None = None
    generate_name: str | None = None
    namespace: str | None = None
    uid: str | None = None
    resource_version: str | None = None
    generation: Int64 | None = None
    creation_timestamp: Time | None = None
    deletion_timestamp: Time | None = None
    deletion_grace_period_seconds: Int64 | None = None
    labels: Labels | None = None
    annotations: dict[str, str] | None = None
    owner_references: list[OwnerReference] | None = None
    finalizers: list[str] | None = None


SelectorOperator = Literal["In", "NotIn", "Exists", "DoesNotExist"]


class LabelSelectorRequirement(KubeModel):
    """One requirement of a label (or claim) selector; requirements are ANDed.

    `operator` is any string, as in metav1.LabelSelectorRequirement and OCM's CRDs (no enum):
    the object is admitted, and whoever builds the selector reports an operator other than
    `SelectorOperator`'s four (`in`, `exists`...) with apimachinery's words
    (`placement.selectors.requirement_error`; a Placement becomes Misconfigured)."""

    key: str
    operator: str
    values: list[str] | None = None


class LabelSelector(KubeModel):
    """metav1.LabelSelector: matchLabels and matchExpressions, ANDed; empty matches everything."""

    match_labels: dict[str, str] | None = None
    match_expressions: list[LabelSelectorRequirement] | None = None


ConditionStatus = Literal["True", "False", "Unknown"]


class Condition(KubeModel):
    """metav1.Condition, with the CRD validation of its fields."""

    type: Annotated[str, Field(max_length=316, pattern=QUALIFIED_NAME_PATTERN)]
    status: ConditionStatus
    reason: Annotated[
        str,
        Field(min_length=1, max_length=1024, pattern=r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"),
    ]
    message: Annotated[str, Field(max_length=32768)]
    last_transition_time: Time
    observed_generation: Annotated[int, IntRange(0, None, "int64")] | None = None


# --- objects -----------------------------------------------------------------------------------


def field_error(
    model: BaseModel | type[BaseModel], problems: list[tuple[tuple[str | int, ...], Any, str]]
) -> ValidationError:
    """A validation error with one line per (location, value, message) in `problems`, for rules
    a validator checks across fields; raised inside a validator, the locations join the
    enclosing ones (`spec` in a Placement becomes `spec...` of the document)."""
    title = model.__name__ if isinstance(model, type) else type(model).__name__
    return ValidationError.from_exception_data(
        title,
        [
            InitErrorDetails(
                type=PydanticCustomError("field_rule", "{message}", {"message": message}),
                loc=loc,
                input=value,
            )
            for loc, value, message in problems
        ],
    )


class KubeObject(KubeModel):
    """A top-level API object. Subclasses set the class data that locates them in the API."""

    GROUP: ClassVar[str] = ""
    VERSION: ClassVar[str] = "v1"
    KIND: ClassVar[str] = ""
    PLURAL: ClassVar[str] = ""
    NAMESPACED: ClassVar[bool] = True
    SHORT_NAMES: ClassVar[tuple[str, ...]] = ()
    HAS_STATUS: ClassVar[bool] = False
    # How `metadata.name` is validated (Kubernetes: a DNS-1123 subdomain for most kinds); None
    # for kinds that are never stored, whose names are free.
    NAME_RULE: ClassVar[NameRule | None] = "subdomain"

    api_version: str | None = None
    kind: str | None = None
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)

    @classmethod
    def api_version_string(cls) -> str:
        """`group/version`, or just `version` for the core group."""
        return f"{cls.GROUP}/{cls.VERSION}" if cls.GROUP else cls.VERSION

    @field_validator("metadata", mode="after")
    @classmethod
    def _check_names(cls, meta: ObjectMeta) -> ObjectMeta:
        # A field validator rather than a model one, so that a bad name is reported together
        # with the other fields' problems; a name that is unset is fine here (a document must
        # have one, but objects built in code and generateName may leave it empty).
        checks: list[tuple[str, str | None, NameRule | None, bool]] = [
            ("name", meta.name, cls.NAME_RULE, False),
            ("generateName", meta.generate_name, cls.NAME_RULE, True),
        ]
        if cls.NAMESPACED:
            checks.append(("namespace", meta.namespace, "label", False))
        problems: list[tuple[tuple[str | int, ...], Any, str]] = [
            ((field,), value, invalid_value(value, reason))
            for field, value, rule, prefix in checks
            if value and rule is not None
            for reason in name_problems(value, rule, prefix)
        ]
        if problems:
            raise field_error(cls, problems)
        return meta

    @model_validator(mode="after")
    def _fill_type_meta(self) -> KubeObject:
        # Objects built in code get their apiVersion and kind, so that what we write is complete.
        if self.api_version is None:
            self.api_version = self.api_version_string()
        if self.kind is None:
            self.kind = self.KIND
        return self

    @property
    def name(self) -> str:
        return self.metadata.name or ""

    @property
    def namespace(self) -> str:
        return self.metadata.namespace or ""

    @property
    def key(self) -> str:
        """`namespace/name` for namespaced objects, `name` for cluster-scoped ones."""
        return f"{self.namespace}/{self.name}" if self.NAMESPACED else self.name

    def to_wire(self) -> dict[str, Any]:
        data = super().to_wire()
        # Type meta first, as kubectl prints it.
        return {
            "apiVersion": self.api_version,
            "kind": self.kind,
            **{k: v for k, v in data.items() if k not in ("apiVersion", "kind")},
        }


def without_nulls(value: Any) -> Any:
    """`value` (wire form) with every null dropped from its objects, at any depth."""
    # The API server drops nulls, so a field set to None and an absent one are the same.
    if isinstance(value, dict):
        return {k: without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [without_nulls(v) for v in value]
    return value
