"""Cluster options of `serve`; under mlx.launch with more than one rank, `serve` runs the cluster."""

from __future__ import annotations

import argparse
from collections.abc import Callable


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add --rank-timeout and --heartbeat to `serve` and route it to the cluster when launched."""
    serve = subparsers.choices.get("serve")
    if serve is None:
        return
    serve.add_argument(
        "--rank-timeout",
        type=float,
        default=60.0,
        metavar="S",
        help="cluster only: a rank that does not answer within S seconds degrades the cluster",
    )
    serve.add_argument(
        "--heartbeat",
        type=float,
        default=10.0,
        metavar="S",
        help="cluster only: ping the ranks every S seconds while idle",
    )
    single = serve.get_default("func")
    serve.set_defaults(func=lambda args: run_serve(args, single))


def run_serve(args: argparse.Namespace, single: Callable[[argparse.Namespace], int]) -> int:
    """The cluster under mlx.launch with several ranks; the single-process server otherwise."""
    from .group import ClusterGroup, launched
    from .sigterm import hold_sigterm, release_sigterm

    if launched():
        hold_sigterm()  # before the group's threads start: rank 0 reads who sends SIGTERM (sigterm.py)
    group = ClusterGroup.init()
    if group is None:
        release_sigterm()
        return single(args)
    from .serve import run_cluster_serve

    return run_cluster_serve(args, group)
