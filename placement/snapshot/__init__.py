"""`FleetSnapshot`: the immutable, column-oriented view of the fleet for one scheduling cycle."""

__all__: list[str] = []
