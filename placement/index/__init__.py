"""`FleetIndex`: the fleet's numpy columns, decision counts and documents, kept from watch
events."""

__all__: list[str] = []
