"""The leader election timing flags of the long-running verbs (`run`, `scheduler run`), as kube
components spell them: `--leader-elect-lease-duration`, `--leader-elect-renew-deadline`,
`--leader-elect-retry-period`, each a Go duration (`15s`, `1m`) or a number of seconds.

The trade-off (also in each flag's help): a shorter lease lets a standby take over sooner after
the leader dies (at most lease duration + retry period after its last renew) but costs a Lease
write every retry period and makes a leader step down sooner when the API server is slow; the
renew deadline must be below the lease duration (a leader steps down before anyone may take
over) and above 1.2 x the retry period (client-go's rule).
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass

# The configuration models (pydantic) are imported where a flag is read, not at the top: the
# parser of `run` and `scheduler run` is built without them (start-up time).

__all__ = ["LeaseTiming", "add_lease_flags", "lease_timing"]


@dataclass(frozen=True)
class LeaseTiming:
    """The flags given (None: not given, the default or the configuration file decides)."""

    lease_duration: float | None = None
    renew_deadline: float | None = None
    retry_period: float | None = None

    def applied(self, lease: float, renew: float, retry: float) -> tuple[float, float, float]:
        """These flags over the given values; ValueError naming the flags when the result
        breaks the rules (LeaderConfig's)."""
        chosen = (
            lease if self.lease_duration is None else self.lease_duration,
            renew if self.renew_deadline is None else self.renew_deadline,
            retry if self.retry_period is None else self.retry_period,
        )
        # here, not at the top: the leader module brings the Kubernetes client, which the
        # command line must not import to build its parser (start-up time)
        from apis.schedulerconfig import MAX_LEASE_DURATION_SECONDS, lease_duration_problem
        from controllers.runtime.leader import LeaderConfig

        if chosen[0] > MAX_LEASE_DURATION_SECONDS:
            where = "--leader-elect-lease-duration" if self.lease_duration else "leaseDuration"
            raise ValueError(f"{where}: {lease_duration_problem(chosen[0])}")
        try:
            LeaderConfig(
                name="check",
                namespace="check",
                lease_duration=chosen[0],
                renew_deadline=chosen[1],
                retry_period=chosen[2],
            )
        except ValueError as exc:
            flags = str(exc).replace("lease_duration", "--leader-elect-lease-duration")
            flags = flags.replace("renew_deadline", "--leader-elect-renew-deadline")
            raise ValueError(flags.replace("retry_period", "--leader-elect-retry-period")) from None
        return chosen


def _duration(text: str) -> float:
    """A Go duration, or a number of seconds within one (not nan, not inf)."""
    from apis.configmodel import MAX_DURATION_SECONDS, go_duration_seconds

    try:
        seconds = float(text)
        if not math.isfinite(seconds) or abs(seconds) > MAX_DURATION_SECONDS:
            raise argparse.ArgumentTypeError(f'invalid duration "{text}" (e.g. "15s", "1m30s")')
    except ValueError:
        try:
            seconds = go_duration_seconds(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    if seconds <= 0:
        raise argparse.ArgumentTypeError(f"must be positive (got {text!r})")
    return seconds


def add_lease_flags(parser: argparse.ArgumentParser, defaults: tuple[str, str, str]) -> None:
    """The three flags on `parser`; `defaults` says, per flag, where an unset value comes
    from."""
    parser.add_argument(
        "--leader-elect-lease-duration",
        type=_duration,
        metavar="DURATION",
        help="how long a Lease holds after its last renew; a standby takes over at most this "
        "plus the retry period after the leader died (shorter: faster failover, a leader "
        f"steps down sooner when the API server is slow; {defaults[0]})",
    )
    parser.add_argument(
        "--leader-elect-renew-deadline",
        type=_duration,
        metavar="DURATION",
        help="a leader that has not renewed for this long stops writing and steps down; "
        f"below the lease duration, above 1.2 x the retry period ({defaults[1]})",
    )
    parser.add_argument(
        "--leader-elect-retry-period",
        type=_duration,
        metavar="DURATION",
        help="how often the leader renews and a standby looks (shorter: faster failover, "
        f"one Lease request per period per replica; {defaults[2]})",
    )


def lease_timing(args: argparse.Namespace) -> LeaseTiming:
    return LeaseTiming(
        args.leader_elect_lease_duration,
        args.leader_elect_renew_deadline,
        args.leader_elect_retry_period,
    )
