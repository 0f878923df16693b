"""Reading placements' decisions from the outside: what add-on agents and add-on managers use
to know where to act (`DecisionTracker`); pairs with `placement.rollout` for rollouts."""

from controllers.consumer.tracker import DEFAULT_SETTLE, DecisionTracker, PlacementNotFoundError

__all__ = ["DEFAULT_SETTLE", "DecisionTracker", "PlacementNotFoundError"]
