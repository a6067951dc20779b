"""Admission: the one check a run passes before anything is stored or spawned.

``admit`` = the knobs and their combinations (``spec.config.validate``, pure) + what
this machine can do (a cgroup cap needs a writable cgroup v1 memory controller, a Dask
scheduler must answer) + what
only the data can refuse (``data.sources.preflight``: rows of a file, one class, a
batch larger than the data). Every launch path (dashboard, CLI, sweeps, recommend
--verify) goes through it, so a run that cannot work is refused with one clear
message and never stored as a failure.
"""

from __future__ import annotations

from typing import Any, Mapping

from svmcore.data.sources import preflight
from svmcore.engine import limits
from svmcore.spec.config import RunConfig, validate
from svmcore.spec.errors import ConfigError
from svmcore.spec.scheduler import parse_address, unreachable_reason

SCHEDULER_CONNECT_S = 10.0  # one TCP connection to a run's Dask scheduler before launch


def check_machine(cfg: RunConfig) -> None:
    """Refuse what this machine cannot do: a cgroup cap without a writable controller, a
    Dask scheduler (``--scheduler``) where nothing answers."""
    if cfg.cap_kind == "cgroup" and not limits.cgroup_available():
        raise ConfigError("cap_kind", "cgroup caps are not available on this machine "
                          "(needs a writable cgroup v1 memory controller); use rlimit")
    if cfg.scheduler is not None:
        reason = unreachable_reason(*parse_address(cfg.scheduler), SCHEDULER_CONNECT_S)
        if reason:
            raise ConfigError("scheduler", f"cannot reach the Dask scheduler at {cfg.scheduler}: {reason}")


def admit(values: Mapping[str, Any] | RunConfig, cache_dir: str | None) -> RunConfig:
    """A config ready to launch, or a ConfigError/DataError naming the problem.
    ``cache_dir`` holds the data scans (None: skip the data rules)."""
    cfg = values if isinstance(values, RunConfig) else validate(values)
    check_machine(cfg)
    if cache_dir is not None:
        preflight(cfg, cache_dir)
    return cfg
