"""Which results directory the containers mount: `training.results_dir`, except while the run of
this stack and these inputs is still going in the one they mount now. Another directory is
another mount, hence containers made anew, which would stop that run: nothing but a new run
stops a run, so the containers keep the directory until the run ends, and the first `up` after
it moves them (assets/host/deepspeed-launch.sh then finds the finished run where it is)."""

from __future__ import annotations

from dataclasses import dataclass

from components.hosts.probe import HostFacts


@dataclass(frozen=True)
class ResultsMount:
    directory: str
    """The host directory every container mounts for the runs' results."""
    kept_for: str = ""
    """The run still going there, when that is not training.results_dir ("" when it is)."""


def results_mount(facts: HostFacts, manager: str, configured: str, run_suffix: str) -> ResultsMount:
    """CONFIGURED (training.results_dir) unless the manager's container mounts another directory
    in which the last run, of RUN_SUFFIX (components.render.results.run_suffix: this stack,
    these inputs), is still going. A run of other inputs is stopped by the new run anyway."""
    mounted = facts.results_mounts.get(manager)
    last = facts.last_runs.get(manager)
    if (
        mounted is not None
        and mounted != configured
        and last is not None
        and last.state == "running"
        and last.name.endswith(f"-{run_suffix}")
    ):
        return ResultsMount(mounted, kept_for=last.name)
    return ResultsMount(configured)
