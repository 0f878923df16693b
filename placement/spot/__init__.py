"""The spot webhook's pure core: the spot/on-demand rules and the exact on-demand ledger."""

__all__: list[str] = []
