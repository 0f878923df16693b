"""`NodeDeclaredFeatures`: pods needing a node feature go to nodes declaring it."""

__all__: list[str] = []
