"""`AddOn/<resource>/<score>`: AddOnPlacementScores, with expiry as a WARNING."""

from __future__ import annotations

from datetime import timedelta

import numpy as np

from apis.placements import ScoreCoordinate
from placement.framework import Code, Cycle, ScoreResult
from placement.snapshot.fleet_snapshot import FleetSnapshot
from placement.testing import NOW, cluster, placement, score, snapshot
from plugins.addon import AddOn

COORDINATE = ScoreCoordinate.model_validate(
    {"type": "AddOn", "addOn": {"resourceName": "usage", "scoreName": "cpu"}}
)


def run(fleet: FleetSnapshot) -> ScoreResult:
    return AddOn(COORDINATE).score(Cycle(NOW), placement("apps", "p"), fleet, np.arange(fleet.size))


def test_addon_is_named_after_its_coordinate() -> None:
    assert AddOn(COORDINATE).name == "AddOn/usage/cpu"


def test_addon_reads_the_named_score_of_each_clusters_resource() -> None:
    fleet = snapshot(
        [
            cluster("a"),
            cluster("b"),
            cluster("c"),
            score("a", "usage", {"cpu": 40, "memory": 90}),
            score("b", "usage", {"cpu": -70}),
            score("c", "other", {"cpu": 99}),
        ]
    )
    result = run(fleet)
    assert result.scores.tolist() == [40, -70, 0]
    assert result.status.code == Code.SUCCESS


def test_addon_scores_zero_without_the_score_item() -> None:
    fleet = snapshot([cluster("a"), score("a", "usage", {"memory": 50})])
    assert run(fleet).scores.tolist() == [0]


def test_addon_takes_the_last_duplicate_score_item() -> None:
    fleet = snapshot([cluster("a"), score("a", "usage", [("cpu", 10), ("cpu", 20)])])
    assert run(fleet).scores.tolist() == [20]


def test_expired_addon_scores_count_zero_and_warn_naming_them() -> None:
    fleet = snapshot(
        [
            cluster("a"),
            cluster("b"),
            cluster("c"),
            score("a", "usage", {"cpu": 40}, valid_until=NOW - timedelta(seconds=1)),
            score("b", "usage", {"cpu": 50}, valid_until=NOW + timedelta(seconds=1)),
            score("c", "usage", {"cpu": 60}, valid_until=NOW - timedelta(days=1)),
        ]
    )
    result = run(fleet)
    assert result.scores.tolist() == [0, 50, 0]
    assert result.status.code == Code.WARNING
    assert result.status.message == "AddOnPlacementScores a/usage c/usage expired"
    assert result.status.plugin == "AddOn/usage/cpu"


def test_addon_score_valid_until_now_is_not_expired() -> None:
    fleet = snapshot([cluster("a"), score("a", "usage", {"cpu": 40}, valid_until=NOW)])
    result = run(fleet)
    assert result.scores.tolist() == [40]
    assert result.status.code == Code.SUCCESS


def test_addon_score_of_a_non_candidate_does_not_warn() -> None:
    fleet = snapshot(
        [cluster("a"), score("a", "usage", {"cpu": 40}, valid_until=NOW - timedelta(hours=1))]
    )
    result = AddOn(COORDINATE).score(
        Cycle(NOW), placement("apps", "p"), fleet, np.empty(0, dtype=np.intp)
    )
    assert result.status.code == Code.SUCCESS
