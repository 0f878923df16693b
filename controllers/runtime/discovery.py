"""Which optional kinds the API server serves (a CRD such as PodGroup may not be installed),
asked before a controller builds its informers, and asked again while the server does not
answer, as the informers retry their lists: an unreachable server at start-up is a WARNING line
per retry round, then, after the sync timeout, the `StartError` a controller whose caches do
not sync raises, not a failure at the first refused connection.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from apis.meta import KubeObject
from controllers.kube.errors import ApiError, NotFoundError
from controllers.kube.gateway import Gateway
from controllers.runtime.controller import StartError, failure_reasons

__all__ = ["served_kinds"]

log = logging.getLogger(__name__)


async def served_kinds(
    gateway: Gateway,
    classes: Sequence[type[KubeObject]],
    *,
    timeout: float | None,
    retry_delay: float = 0.05,
    max_retry_delay: float = 5.0,
) -> tuple[set[type[KubeObject]], float | None]:
    """The classes among `classes` the server serves: one list of at most one object each (404:
    not served), in rounds until each got an answer; and what is left of `timeout`, for the
    caches to sync in (one budget for both). `StartError` after `timeout` seconds."""
    loop = asyncio.get_running_loop()
    began = loop.time()
    answered: dict[type[KubeObject], bool] = {}
    errors: dict[type[KubeObject], Exception] = {}
    delay = retry_delay
    attempt = 0
    try:
        async with asyncio.timeout(timeout):
            while True:
                pending = [cls for cls in classes if cls not in answered]
                # One round asks for every kind at once: a round takes one request's time.
                results = await asyncio.gather(*(_served(gateway, cls) for cls in pending))
                for cls, result in zip(pending, results, strict=True):
                    if isinstance(result, ApiError):
                        errors[cls] = result
                    else:
                        answered[cls] = result
                        errors.pop(cls, None)
                if not errors:
                    left = None if timeout is None else max(0.0, timeout - loop.time() + began)
                    return {cls for cls, served in answered.items() if served}, left
                attempt += 1
                log.warning(
                    "cannot tell which kinds are served (attempt %d): %s; retrying in %.2gs",
                    attempt,
                    _reasons(classes, answered, errors),
                    delay,
                )
                await asyncio.sleep(delay)
                delay = min(delay * 2, max_retry_delay)
    except TimeoutError:
        reasons = _reasons(classes, answered, errors)
        raise StartError(f"caches not synced after {timeout:g}s: {reasons}") from None


async def _served(gateway: Gateway, cls: type[KubeObject]) -> bool | ApiError:
    """Whether the server serves `cls` (a 404 says not), or the error that prevents knowing."""
    try:
        async for _ in gateway.list_pages(cls, limit=1):
            break
    except NotFoundError:
        return False
    except ApiError as exc:
        return exc
    return True


def _reasons(
    classes: Sequence[type[KubeObject]],
    answered: dict[type[KubeObject], bool],
    errors: dict[type[KubeObject], Exception],
) -> str:
    pending = [cls for cls in classes if cls not in answered]
    return failure_reasons((cls.KIND, errors.get(cls), "list") for cls in pending)
