"""`InterPodAffinity`: pod (anti-)affinity terms, their counts per node and their scores."""

__all__: list[str] = []
