"""`ImageLocality`: nodes that already hold the pod's images score higher (less to pull).

kube's arithmetic: for each container of the pod (init containers included) whose image, named
as the CRI does (`nginx` is `nginx:latest`: a name whose last `:` does not follow its last `/`
gets `:latest`), is listed in a node's `status.images`, the node gets the image's size scaled
by its spread, `int(size * (nodes holding it / all nodes))`. The sum is clamped between 23 MiB
and 1000 MiB per container, then mapped to 0..100 with integer division.

As kube's scheduler cache, an image name's size is the one reported by the first node that
listed it, kept while any node still lists it. The plugin follows node events for this (it is
an `EventHandler`; no event makes a pod it rejected schedulable, it rejects none), and keeps,
per snapshot node set, the rows holding each image name asked for so far, and per pod image
list the full score vector: pods of one workload pay once per node event.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from apis.core import Node, Pod
from apis.pluginargs import NoArgs
from placement.arrays import RowIndex, ScoreVector
from placement.pods.cluster.nodes import NodeSnapshot
from placement.pods.framework.events import ClusterEvent, NodeEvent
from placement.pods.framework.interface import (
    MAX_NODE_SCORE,
    ClusterView,
    EventHandler,
    PodCycle,
    PodInfo,
    Score,
)
from placement.pods.framework.noscore import no_scores
from plugins.pods.helper.args import args_of
from plugins.pods.helper.snapshot_cache import frozen, on_rows

__all__ = [
    "MAX_CONTAINER_THRESHOLD",
    "MB",
    "MIN_THRESHOLD",
    "ImageLocality",
    "image_score",
    "normalized_image_name",
    "pod_images",
]

MB = 1024 * 1024
MIN_THRESHOLD = 23 * MB
MAX_CONTAINER_THRESHOLD = 1000 * MB
_MEMO_LIMIT = 256


def normalized_image_name(name: str) -> str:
    """The name the CRI reports for an image reference: a missing tag is `:latest`."""
    if name.rfind(":") <= name.rfind("/"):
        return name + ":latest"
    return name


def pod_images(pod: Pod) -> tuple[str, ...]:
    """The normalized image of every init container then container, in order."""
    spec = pod.spec
    every = (*(spec.init_containers or ()), *spec.containers)
    return tuple(normalized_image_name(c.image or "") for c in every)


def image_score(total: int | npt.NDArray[np.int64], containers: int) -> Any:
    """kube's calculatePriority: the summed scaled sizes clamped and mapped to 0..100."""
    if containers == 0:
        return total * 0  # no container: no image to be near (kube's arithmetic gives 0 too)
    top = MAX_CONTAINER_THRESHOLD * containers
    clamped = np.clip(total, MIN_THRESHOLD, top)
    return MAX_NODE_SCORE * (clamped - MIN_THRESHOLD) // (top - MIN_THRESHOLD)


class _ImageState:
    __slots__ = ("nodes", "size")

    def __init__(self, size: int) -> None:
        self.size = size
        self.nodes: set[str] = set()


def _node_images(node: Node) -> tuple[tuple[str, int], ...]:
    """(name, size) for every name of every image the node lists, in its order."""
    status = node.status
    return tuple(
        (name, image.size_bytes or 0)
        for image in (status.images or () if status else ())
        for name in image.names or ()
    )


class _ImageBook:
    """Which nodes list each image name, and its size (kube's cache `imageStates`)."""

    def __init__(self) -> None:
        self.version = 0
        self._of_node: dict[str, tuple[tuple[str, int], ...]] = {}
        self.states: dict[str, _ImageState] = {}

    def put(self, name: str, images: tuple[tuple[str, int], ...]) -> None:
        if self._of_node.get(name) == images and name in self._of_node:
            return
        self.remove(name)
        self._of_node[name] = images
        for image, size in images:
            state = self.states.get(image)
            if state is None:
                state = self.states[image] = _ImageState(size)
            state.nodes.add(name)
        self.version += 1

    def remove(self, name: str) -> None:
        images = self._of_node.pop(name, None)
        if images is None:
            return
        for image, _ in images:
            state = self.states.get(image)
            if state is not None:
                state.nodes.discard(name)
                if not state.nodes:
                    del self.states[image]
        self.version += 1


class ImageLocality(Score, EventHandler):
    name = "ImageLocality"

    def __init__(self) -> None:
        self._book = _ImageBook()
        self._names: tuple[str, ...] | None = None  # the node set the caches below are for
        self._row_of: dict[str, int] = {}
        self._version = -1
        self._rows: dict[str, tuple[RowIndex, int]] = {}  # image -> (rows, scaled size)
        self._scores: dict[tuple[str, ...], ScoreVector] = {}  # pod images -> full vector
        self._nothing: ScoreVector = frozen(np.zeros(0, dtype=np.int64))  # no row scores

    @classmethod
    def from_args(cls, args: NoArgs | Mapping[str, Any] | None = None) -> ImageLocality:
        args_of(NoArgs, args)  # no args: any field is refused
        return cls()

    def on_event(self, event: ClusterEvent, cluster: ClusterView) -> bool:
        if isinstance(event, NodeEvent):
            self.observe(event.node, deleted=event.type == "Deleted")
        return False

    def observe(self, node: Node, *, deleted: bool = False) -> None:
        """Take a node's images into account (or forget them)."""
        name = node.metadata.name or ""
        if deleted:
            self._book.remove(name)
        else:
            self._book.put(name, _node_images(node))

    def _image(self, image: str, nodes: NodeSnapshot) -> tuple[RowIndex, int] | None:
        found = self._rows.get(image)
        if found is not None:
            return found
        state = self._book.states.get(image)
        if state is None:
            return None
        row_of = self._row_of
        rows = sorted(r for r in map(row_of.get, state.nodes) if r is not None)
        if not rows:
            return None
        spread = len(rows) / nodes.size
        # kube: the size as a float64 times the spread, truncated to an integer.
        found = (frozen(np.array(rows, dtype=np.intp)), int(state.size * spread))
        self._rows[image] = found
        return found

    def _vector(self, images: Sequence[str], nodes: NodeSnapshot) -> ScoreVector:
        if nodes.names is not self._names:
            self._names = nodes.names
            self._row_of = {name: row for row, name in enumerate(nodes.names)}
            self._version = -1
        if self._book.version != self._version:
            self._version = self._book.version
            self._rows, self._scores = {}, {}
        key = tuple(images)
        found = self._scores.get(key)
        if found is not None:
            return found
        total = np.zeros(nodes.size, dtype=np.int64)
        for image in images:
            held = self._image(image, nodes)
            if held is not None:
                total[held[0]] += held[1]
        if len(self._scores) >= _MEMO_LIMIT:
            self._scores = {}
        scores: ScoreVector = frozen(image_score(total, len(images)))
        if not scores.any():
            scores = self._nothing  # the marker of a vector of zeros
        self._scores[key] = scores
        return scores

    def score(
        self, cycle: PodCycle, pod: PodInfo, nodes: NodeSnapshot, rows: RowIndex
    ) -> ScoreVector:
        vector = self._vector(pod_images(pod.pod), nodes)
        if vector is self._nothing:
            return no_scores(len(rows))  # no node holds any of its images: Skip
        found: ScoreVector = on_rows(vector, rows, nodes.size)
        return found
