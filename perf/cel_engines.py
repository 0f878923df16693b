"""Which CEL engine: the three candidates on the package index measured on the CEL benchmark's
two expressions (`perf/test_cel_bench.py`) over N generated ManagedClusters.

    python -m venv /tmp/cel && /tmp/cel/bin/pip install cel-expr-python cel-python \\
        common-expression-language
    /tmp/cel/bin/python perf/cel_engines.py --clusters 10000

prints, per engine: the time to compile both expressions, the evaluation time per cluster (both
expressions, ANDed, the cluster as a plain dict as the controller holds it) and how many
clusters matched (the three must agree). An engine that is not installed is skipped. Not a
test (the other two engines are not dependencies); docs/architecture.md, "CEL engine", records a
run and what else decided the choice (custom and member functions, cost accounting).
"""

from __future__ import annotations

import argparse
import importlib
import json
import random
import time
from collections.abc import Callable
from typing import Any

EXPRESSIONS = [
    'managedCluster.metadata.labels["env"] in ["prod", "staging"]',
    'managedCluster.metadata.labels["provider"] != "alibaba"',
]

Evaluate = Callable[[dict[str, Any]], bool]


def clusters(count: int, seed: int = 20261123) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    out = []
    for i in range(count):
        labels = {
            "env": rng.choice(["prod", "staging", "dev", "test"]),
            "provider": rng.choice(["aws", "gcp", "azure", "alibaba"]),
        }
        out.append(
            {
                "metadata": {"name": f"cluster-{i:06d}", "labels": labels},
                "spec": {"hubAcceptsClient": True},
                "status": {"version": {"kubernetes": f"v1.{rng.randint(25, 31)}.0"}},
            }
        )
    return out


def _cel_expr_python() -> Callable[[list[str]], Evaluate]:
    cel = importlib.import_module("cel_expr_python.cel")
    env = cel.NewEnv(variables={"managedCluster": cel.Type.Map(cel.Type.STRING, cel.Type.DYN)})

    def build(expressions: list[str]) -> Evaluate:
        programs = [env.compile(e) for e in expressions]

        def run(doc: dict[str, Any]) -> bool:
            activation = env.Activation({"managedCluster": doc})
            return all(p.eval(activation).value() is True for p in programs)

        return run

    return build


def _cel_python() -> Callable[[list[str]], Evaluate]:
    celpy = importlib.import_module("celpy")
    env = celpy.Environment()

    def build(expressions: list[str]) -> Evaluate:
        programs = [env.program(env.compile(e)) for e in expressions]

        def run(doc: dict[str, Any]) -> bool:
            activation = {"managedCluster": celpy.json_to_cel(doc)}
            return all(bool(p.evaluate(activation)) for p in programs)

        return run

    return build


def _common_expression_language() -> Callable[[list[str]], Evaluate]:
    cel = importlib.import_module("cel")

    def build(expressions: list[str]) -> Evaluate:
        programs = [cel.compile(e) for e in expressions]

        def run(doc: dict[str, Any]) -> bool:
            context = {"managedCluster": doc}
            return all(p.execute(context) is True for p in programs)

        return run

    return build


ENGINES: dict[str, Callable[[], Callable[[list[str]], Evaluate]]] = {
    "cel-expr-python": _cel_expr_python,
    "cel-python": _cel_python,
    "common-expression-language": _common_expression_language,
}


def measure(name: str, docs: list[dict[str, Any]]) -> dict[str, Any]:
    try:
        build = ENGINES[name]()
    except ImportError as exc:
        return {"engine": name, "skipped": f"not installed ({exc.name})"}
    began = time.perf_counter()
    run = build(EXPRESSIONS)
    compiled = time.perf_counter() - began
    began = time.perf_counter()
    matched = sum(1 for doc in docs if run(doc))
    spent = time.perf_counter() - began
    return {
        "engine": name,
        "compile_ms": round(compiled * 1e3, 2),
        "us_per_cluster": round(spent / len(docs) * 1e6, 2),
        "matched": matched,
    }


def main() -> None:
    parser = argparse.ArgumentParser(prog="python perf/cel_engines.py")
    parser.add_argument("--clusters", type=int, default=10_000)
    args = parser.parse_args()
    docs = clusters(args.clusters)
    for name in ENGINES:
        print(json.dumps(measure(name, docs)))


if __name__ == "__main__":
    main()
