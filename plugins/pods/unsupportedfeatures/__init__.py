"""`UnsupportedFeatures`: kept registered so that configurations naming it still load."""

__all__: list[str] = []
