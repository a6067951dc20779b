"""Admission: the one check a run passes before anything is stored or spawned.

``admit`` = the knobs and their combinations (``spec.config.validate``, pure, once) + what
this machine can do (a cgroup cap needs a writable cgroup v1 memory controller, a Dask
scheduler must answer) + what only the data can refuse (rows of a file, one class, a batch
larger than the data), read from one scan of the data and of its test file. It returns the
``Admitted`` launch: the config, those scans (the worker receives them instead of reading
them again) and, once the caller has made it, the forecast (the engine never imports the
memory model: ``predict.launch.admit`` adds it). Every launch path (dashboard, CLI, sweeps,
recommend --verify, fit) goes through it, so a run that cannot work is refused with one
clear message and never stored as a failure.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Mapping

from svmcore.data.sources import DataInfo, FileStamp, Source, check_lean, check_trainable, n_test_rows, scan
from svmcore.engine import limits
from svmcore.spec.config import RunConfig, validate
from svmcore.spec.errors import ConfigError, DataError
from svmcore.spec.result import Forecast
from svmcore.spec.scheduler import parse_address, unreachable_reason

SCHEDULER_CONNECT_S = 10.0  # one TCP connection to a run's Dask scheduler before launch


@dataclass(frozen=True)
class Admitted:
    """A launch: its config, and when it was admitted against its data, the scans of the data
    and of its test file with the files' identities then (``stamps``), and its forecast."""

    config: RunConfig
    scan: DataInfo | None = None
    test_scan: DataInfo | None = None
    stamps: tuple[tuple[str, FileStamp], ...] = ()
    forecast: Forecast | None = None

    @property
    def scans(self) -> tuple[DataInfo | None, DataInfo | None]:
        return self.scan, self.test_scan

    @property
    def prediction(self) -> Forecast | None:
        """The forecast kept beside the run's measurement: a calibrated one (a lower bound is
        no prediction to judge a run by)."""
        return self.forecast if self.forecast is not None and not self.forecast.lower_bound else None

    def job_scans(self) -> dict:
        """The scans as the worker's job carries them (``scan``, ``test_scan``), while the files
        are the ones scanned: a file changed since (while its run was queued) the worker scans again."""
        if self.scan is None or any(FileStamp.of(path) != stamp for path, stamp in self.stamps):
            return {}
        return {"scan": self.scan.to_dict(), **({"test_scan": self.test_scan.to_dict()} if self.test_scan else {})}


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


def admit(values: Mapping[str, Any] | RunConfig, cache_dir: str | None) -> Admitted:
    """A launch ready to run (without its forecast), or a ConfigError/DataError naming the
    problem. ``cache_dir`` holds the data scans (None: skip the data rules)."""
    cfg = values if isinstance(values, RunConfig) else validate(values)
    check_machine(cfg)
    return check_data(cfg, cache_dir) if cache_dir is not None else Admitted(cfg)


def check_data(cfg: RunConfig, cache_dir: str | None) -> Admitted:
    """Everything a run would refuse because of its data (``validate`` cannot know a file's
    rows or classes), read from ``scanned``: ``check_trainable`` (one class, batch size above
    the training rows, kernel-svm above its row limit) and the need for held-out rows."""
    launch = scanned(cfg, cache_dir)
    check_trainable(launch.scan, cfg)
    if cfg.test_file is None and n_test_rows(launch.scan.rows) == 0:
        raise DataError(f"no rows are left for testing ({launch.scan.rows:,} rows hold out none); "
                        "give a test file or more rows")
    return launch


def scanned(cfg: RunConfig, cache_dir: str | None) -> Admitted:
    """The config with one scan of its data and of its test file (each cached by the file's
    identity), after refusing the lean path on data that is not svmlight (``check_lean``)."""
    check_lean(cfg)
    sources = [Source(cfg)] + ([Source(dataclasses.replace(cfg, dataset=cfg.test_file, test_file=None))]
                               if cfg.test_file else [])
    info, *test = [scan(s, cache_dir) for s in sources]
    return Admitted(cfg, info, test[0] if test else None, tuple((s.path, s.stamp) for s in sources if s.is_file))
