"""Generic controller machinery that any of our controllers uses, the hub's and the add-ons':
informer cache, work queue, leader election, HTTP endpoint, metrics registry, logs, event
recorder, write-through views and echoes. Nothing here knows about placements or pods."""

__all__: list[str] = []
