"""CustomResourceDefinitions generated from the `apis` models, so the two cannot drift apart.

`python -m controllers.cli.crds [--check] [DIR]` writes (or, with --check, compares) one YAML file
per custom kind in `config/crds/`. The schema is the model's JSON schema turned structural: refs
inlined, nullable unions unwrapped, IntOrString and quantities marked
`x-kubernetes-int-or-string`, free-form maps marked `x-kubernetes-preserve-unknown-fields`.

`config_dir` finds the CRD and sample folders: the copies a wheel ships inside this package
(`data/`, from pyproject's force-include), so that a regular install and the container image
have them, else `config/` of the source tree (the canonical copies, which kustomize reads).
"""

from __future__ import annotations

import argparse
import sys
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

# The models and the manifest writer are imported where a CRD is built: `CRD_DIR` and
# `config_dir` (which the embedded API server and `placement demo` read) come without them.
if TYPE_CHECKING:
    from apis.meta import KubeObject

__all__ = [
    "CRD_DIR",
    "SAMPLES_DIR",
    "build_crd",
    "config_dir",
    "crd_file_name",
    "main",
    "render_all",
]

SOURCE_CONFIG = Path(__file__).resolve().parents[2] / "config"
"""`config/` of the source tree this module runs from (absent in an installed wheel)."""
PACKAGED_CONFIG = "data"
"""The folder of this package a wheel carries the CRDs and samples in."""


def config_dir(name: str) -> Path:
    """The folder `config/<name>` (`crds` or `samples`): the copy a wheel packages inside this
    package, else the source tree's (a clone, an editable install). When neither exists (a
    broken install), the source tree's path, so that errors name the canonical folder."""
    packaged = resources.files(__package__ or "controllers.cli") / PACKAGED_CONFIG / name
    # An installed wheel is a plain folder, so the Traversable is a Path; zipped installs are
    # not supported (the embedded server globs the CRD folder).
    if isinstance(packaged, Path) and packaged.is_dir():
        return packaged
    return SOURCE_CONFIG / name


CRD_DIR = config_dir("crds")
SAMPLES_DIR = config_dir("samples")

_AGE = {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}


def _condition_column(name: str, condition: str) -> dict[str, str]:
    return {
        "name": name,
        "type": "string",
        "jsonPath": f'.status.conditions[?(@.type=="{condition}")].status',
    }


def printer_columns() -> dict[str, list[dict[str, str]]]:
    """kubectl get columns, as OCM and scheduler-plugins print them, per kind."""
    from apis.placements import PLACEMENT_SATISFIED

    return {
        "ManagedCluster": [
            {"name": "Hub Accepted", "type": "boolean", "jsonPath": ".spec.hubAcceptsClient"},
            _condition_column("Joined", "ManagedClusterJoined"),
            _condition_column("Available", "ManagedClusterConditionAvailable"),
            _AGE,
        ],
        "ManagedClusterSet": [
            _condition_column("Empty", "ClusterSetEmpty"),
            _AGE,
        ],
        "ManagedClusterSetBinding": [
            {"name": "ClusterSet", "type": "string", "jsonPath": ".spec.clusterSet"},
            _AGE,
        ],
        "Placement": [
            _condition_column("Succeeded", PLACEMENT_SATISFIED),
            {
                "name": "Reason",
                "type": "string",
                "jsonPath": f'.status.conditions[?(@.type=="{PLACEMENT_SATISFIED}")].reason',
            },
            {
                "name": "SelectedClusters",
                "type": "integer",
                "jsonPath": ".status.numberOfSelectedClusters",
            },
        ],
        "PlacementDecision": [
            {
                "name": "Placement",
                "type": "string",
                "jsonPath": ".metadata.labels.cluster\\.open-cluster-management\\.io/placement",
            },
            _AGE,
        ],
        "AddOnPlacementScore": [
            {"name": "ValidUntil", "type": "date", "jsonPath": ".status.validUntil"},
            _AGE,
        ],
        "PodGroup": [
            {"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
            {"name": "MinMember", "type": "integer", "jsonPath": ".spec.minMember"},
            {"name": "Running", "type": "integer", "jsonPath": ".status.running"},
            {"name": "Succeeded", "type": "integer", "jsonPath": ".status.succeeded"},
            {"name": "Failed", "type": "integer", "jsonPath": ".status.failed"},
            _AGE,
        ],
        "ElasticQuota": [
            {"name": "Used", "type": "string", "jsonPath": ".status.used"},
            {"name": "Max", "type": "string", "jsonPath": ".spec.max"},
            _AGE,
        ],
    }


def _describe(name: str, node: dict[str, Any]) -> None:
    """Give the fields of model `name` their descriptions (`crd_descriptions`), where the
    model has none of its own."""
    from controllers.cli.crd_descriptions import FIELD_DESCRIPTIONS

    known = FIELD_DESCRIPTIONS.get(name, {})
    for field, sub in (node.get("properties") or {}).items():
        if "description" not in sub and field in known:
            sub["description"] = known[field]


def _schema(cls: type[KubeObject]) -> dict[str, Any]:
    from apis.crdvalidation import structural
    from controllers.cli.crd_descriptions import TYPE_META

    raw = cls.model_json_schema(by_alias=True, mode="validation")
    defs = raw.pop("$defs", {})
    for name, node in [(cls.__name__, raw), *defs.items()]:
        _describe(name, node)
    schema: dict[str, Any] = structural(raw, defs)
    props = schema["properties"]
    props["apiVersion"] = {"type": "string", "description": TYPE_META["apiVersion"]}
    props["kind"] = {"type": "string", "description": TYPE_META["kind"]}
    # The API server owns metadata's schema: kube-apiserver refuses a CRD whose schema gives
    # metadata anything but its type (a description included).
    props["metadata"] = {"type": "object"}
    schema.pop("x-kubernetes-preserve-unknown-fields", None)
    return schema


def build_crd(cls: type[KubeObject]) -> dict[str, Any]:
    """The CustomResourceDefinition of one custom kind."""
    names: dict[str, Any] = {
        "kind": cls.KIND,
        "listKind": f"{cls.KIND}List",
        "plural": cls.PLURAL,
        "singular": cls.KIND.lower(),
    }
    if cls.SHORT_NAMES:
        names["shortNames"] = list(cls.SHORT_NAMES)
    version: dict[str, Any] = {
        "name": cls.VERSION,
        "served": True,
        "storage": True,
        "schema": {"openAPIV3Schema": _schema(cls)},
    }
    if cls.HAS_STATUS:
        version["subresources"] = {"status": {}}
    columns = printer_columns()
    if cls.KIND in columns:
        version["additionalPrinterColumns"] = columns[cls.KIND]
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{cls.PLURAL}.{cls.GROUP}"},
        "spec": {
            "group": cls.GROUP,
            "names": names,
            "scope": "Namespaced" if cls.NAMESPACED else "Cluster",
            "versions": [version],
        },
    }


def crd_file_name(cls: type[KubeObject]) -> str:
    return f"{cls.GROUP}_{cls.PLURAL}.yaml"


def render_all() -> dict[str, str]:
    """File name -> YAML text of every custom kind's CRD."""
    from apis.registry import CUSTOM_KINDS
    from controllers.cli.manifests import dump_yaml

    header = "# Generated by `python -m controllers.cli.crds` from the apis models. Do not edit.\n"
    return {crd_file_name(cls): header + dump_yaml([build_crd(cls)]) for cls in CUSTOM_KINDS}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m controllers.cli.crds",
        description="Write the CRDs of the custom kinds, generated from the apis models.",
    )
    parser.add_argument("directory", nargs="?", type=Path, default=CRD_DIR)
    parser.add_argument(
        "--check", action="store_true", help="exit 1 if the files differ from the models"
    )
    args = parser.parse_args(argv)
    stale = []
    args.directory.mkdir(parents=True, exist_ok=True)
    for name, text in render_all().items():
        path = args.directory / name
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current == text:
            continue
        stale.append(path)
        if not args.check:
            path.write_text(text, encoding="utf-8")
    if args.check and stale:
        for path in stale:
            print(f"{path}: out of date; run `python -m controllers.cli.crds`", file=sys.stderr)
        return 1
    for path in [] if args.check else stale:
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
