"""Wire models of every object ocm-placement reads or writes."""
__all__: list[str] = []
