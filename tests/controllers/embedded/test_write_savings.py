"""The embedded server's per-write savings: the object admitted is stored as the JSON sent (its
quantities validated, never replaced by parsed ones), and what the validations refuse is refused
as before; a write's answer is the
object's encoding its watchers got (`encoded_as_stored`), made once by the size check; a binding
copies only the parts of the pod it writes, never changing the version stored before it."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from apis.core import Namespace, Node, Pod
from apis.scheduling import PriorityClass
from controllers.embedded.admission import admit
from controllers.embedded.history import encoded_as_stored
from controllers.embedded.pods import bind_pod
from controllers.embedded.resources import load_resources
from controllers.embedded.status import StatusError
from controllers.embedded.store import Store

SERVED = {res.model: res for res in load_resources()}
POD, NODE, CLASS = SERVED[Pod], SERVED[Node], SERVED[PriorityClass]


def pod(name: str, requests: dict[str, Any], **spec: Any) -> dict[str, Any]:
    container = {"name": "c", "image": "app", "resources": {"requests": requests}}
    init = {"name": "i", "image": "app", "resources": {"limits": {"cpu": "1"}}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "uid": name},
        "spec": {"containers": [container], "initContainers": [init], **spec},
    }


def test_the_object_admitted_is_the_json_sent() -> None:
    doc = pod("a", {"cpu": "100m", "memory": 1024}, overhead={"cpu": "10m"})
    sent = copy.deepcopy(doc)
    stored = admit(POD, doc)
    assert stored is doc and json.loads(json.dumps(stored)) == sent


def test_a_negative_request_is_refused_with_kubes_words() -> None:
    with pytest.raises(StatusError) as refused:
        admit(POD, pod("neg", {"cpu": "-100m"}))
    assert refused.value.code == 422
    words = 'requests[cpu]: Invalid value: "-100m": must be greater than or equal to 0'
    assert words in str(refused.value)


def test_a_request_over_its_limit_is_refused() -> None:
    doc = pod("over", {"cpu": "2"})
    doc["spec"]["containers"][0]["resources"]["limits"] = {"cpu": "1"}
    with pytest.raises(StatusError, match="must be less than or equal to cpu limit of 1"):
        admit(POD, doc)


def test_an_invalid_quantity_is_refused_by_the_model() -> None:
    with pytest.raises(StatusError, match="quantity") as refused:
        admit(POD, pod("bad", {"cpu": "lots"}))
    assert refused.value.code == 422


def test_a_writes_answer_is_the_encoding_its_watchers_got() -> None:
    store = Store(load_resources())
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}}
    store.create(SERVED[Namespace], ns)
    watcher = store.watch(POD, "", None)
    created = store.create(POD, pod("w", {"cpu": "1"}), "default")
    line = json.loads(watcher.queue.get_nowait())
    encoded = encoded_as_stored(store.last, created)
    assert encoded is not None and json.loads(encoded) == line["object"] == created
    assert encoded == json.dumps(created).encode()
    assert (
        encoded_as_stored(store.last, copy.deepcopy(created)) is None
    )  # not the object stored: no answer
    dry = store.create(POD, pod("d", {"cpu": "1"}), "default", dry_run=True)
    assert encoded_as_stored(store.last, dry) is None
    gone, _ = store.delete(POD, "default", "w")  # a deletion's answer too
    deleted = json.loads(watcher.queue.get_nowait())
    assert (
        deleted["type"] == "DELETED"
        and encoded_as_stored(store.last, gone) == json.dumps(gone).encode()
    )
    assert json.loads(encoded_as_stored(store.last, gone) or b"") == deleted["object"]


def test_a_binding_leaves_the_version_before_it_as_it_was() -> None:
    store = Store(load_resources())
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}}
    store.create(SERVED[Namespace], ns)
    sent = pod("b", {"cpu": "1"})
    sent["metadata"]["annotations"] = {"kept": "yes"}
    sent["status"] = {"conditions": [{"type": "PodScheduled", "status": "False"}]}
    before = store.create(POD, sent, "default", keep_status=True)
    frozen = copy.deepcopy(before)
    binding = {"metadata": {"name": "b", "annotations": {"added": "1"}}, "target": {"name": "n1"}}
    bound = bind_pod(before, "b", binding)
    stored = store.update(POD, "default", "b", bound, internal=True, revalidate=True)
    assert before == frozen  # the history's object, untouched
    assert stored["spec"]["nodeName"] == "n1" and "nodeName" not in before["spec"]
    assert stored["metadata"]["annotations"] == {"kept": "yes", "added": "1"}
    assert [c["status"] for c in stored["status"]["conditions"]] == ["True"]
    assert stored["metadata"]["resourceVersion"] != before["metadata"]["resourceVersion"]
    # The update's size check made the encoding stored with it, at its resourceVersion.
    assert store.last is not None and store.last.obj is stored
    assert store.last._object == json.dumps(stored).encode()
    assert stored["metadata"]["resourceVersion"] == str(store.rv)
    # Writing the same pod again changes nothing, not even the resourceVersion.
    rv = store.rv
    same = store.update(POD, "default", "b", copy.deepcopy(stored), internal=True)
    assert same is stored and store.rv == rv


def test_a_create_stores_the_encoding_its_size_check_made() -> None:
    store = Store(load_resources())
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}}
    store.create(SERVED[Namespace], ns)
    watcher = store.watch(POD, "", None)
    created = store.create(POD, pod("e", {"cpu": "1"}), "default")
    assert store.last is not None and store.last.obj is created
    made = store.last._object  # set by the size check, before any watcher asked for it
    assert made is not None and made == json.dumps(created).encode()
    assert created["metadata"]["resourceVersion"] == str(store.rv)
    assert json.loads(watcher.queue.get_nowait())["object"] == created
    dry = store.create(POD, pod("f", {"cpu": "1"}), "default", dry_run=True)
    assert "resourceVersion" not in dry["metadata"]  # a dry run gets none, as before
