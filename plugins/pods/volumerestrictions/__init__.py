"""`VolumeRestrictions`: volumes two pods may not share, and ReadWriteOncePod claims."""

__all__: list[str] = []
