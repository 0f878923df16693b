"""`EvenSpread`: the spread-policy selector and its topology levels."""

__all__: list[str] = []
