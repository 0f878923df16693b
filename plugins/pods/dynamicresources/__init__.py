"""`DynamicResources`: ResourceClaims looked up, allocated at Filter, written at PreBind."""

__all__: list[str] = []
