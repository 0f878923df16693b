"""`VolumeZone`: pods whose volumes carry zone labels run in that zone."""

__all__: list[str] = []
