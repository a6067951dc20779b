"""The dashboard's one entry point into svmcore: each user action is one method of one
of its parts, each with one job.

    lab.runs       launch, cancel, view, history, compare, export, delete
    lab.sweeps     preview, start, follow, cancel, trade-offs
    lab.forecasts  data size, forecast, warnings, recommend, calibration
    lab.learn      the remedies' experiments and results
    lab.fits       diagnose a run, make a setting fit a budget (the diagnosis loop)
    lab.exercise   Learn's class exercise: a guess, then its runs, then the reveal
    lab.folders    uploads, generated data, inspection, confinement

A ``Lab`` owns a store and the process-wide run queue. It is thread-safe and meant to
be shared by every browser session of one server (runs outlive their tab).
"""

from __future__ import annotations

import os

from svmcore.app.fit import Fits
from svmcore.app.exercise import Exercise
from svmcore.app.folders import DataFolders
from svmcore.app.forecasts import Forecasts
from svmcore.app.learn import Learn
from svmcore.app.runs import Runs
from svmcore.app.sweeps import Sweeps
from svmcore.engine.queue import RunQueue
from svmcore.engine.recovery import recover
from svmcore.store.sqlite import Store


class Lab:
    def __init__(self, home: str, slots: int = 1):
        self.home = os.path.abspath(home)
        self.store = Store(self.home)
        self.recovered = recover(self.store)
        self.queue = RunQueue(self.store, slots=slots)
        self.folders = DataFolders(self.home)
        self.sweeps = Sweeps(self.store, self.queue, self.folders)
        self.runs = Runs(self.store, self.queue, self.folders, self.sweeps)
        self.forecasts = Forecasts(self.store, self.folders)
        self.learn = Learn(self.store, self.queue, self.folders)
        self.fits = Fits(self.store, self.queue, self.folders)
        self.exercise = Exercise(self.store, self.learn)
