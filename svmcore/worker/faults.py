"""Test-only fault injection (SVMCORE_FAULT): the run fires it at each phase and pass, a
data-parallel run at each mix and on each shard."""

from __future__ import annotations

import os
import time


class Faults:
    """Test-only fault injection from SVMCORE_FAULT, e.g. 'spike:300@train,sleep:5@load'
    (a phase name; epochN: at the start of the Nth training pass; epochs: at the start of
    every pass, so 'hog:8@epochs' leaks 8 MiB a pass).
    Actions: spike:MB (touch MB then free at once), sleep:S, orphan (leave a
    double-forked grandchild), threads:N (start N threads), exit:CODE, raise, hog:MB
    (allocate MB and keep it), die:TEXT (print TEXT on stderr and exit 1, no outcome);
    and changes to the run's data file, as another program would make them: truncate:FRACTION (cut the file to that fraction of its bytes,
    mid-line), append:ROWS (append copies of its first line), tear (append half a
    line, no newline: a writer caught mid-line). With a '-test' suffix (truncate-test,
    ...) they change the test file instead."""

    def __init__(self, spec: str, files: dict | None = None):
        self.spec = spec  # handed on to a data-parallel run's shards
        self.actions: dict[str, list[tuple[str, str]]] = {}
        self.kept = []
        self.files = files or {}  # "dataset" and "test" paths of the run
        for item in filter(None, (s.strip() for s in spec.split(","))):
            action, _, phase = item.partition("@")
            name, _, arg = action.partition(":")
            self.actions.setdefault(phase or "train", []).append((name, arg))

    def fire(self, phase: str) -> None:
        for name, arg in self.actions.get(phase, []):
            if name in ("spike", "hog"):
                block = bytearray(int(float(arg) * 2**20))
                for i in range(0, len(block), 4096):
                    block[i] = 1
                if name == "hog":
                    self.kept.append(block)
                del block
            elif name == "sleep":
                time.sleep(float(arg))
            elif name == "orphan":
                if os.fork() == 0:
                    if os.fork() == 0:
                        os.setsid()
                        time.sleep(600)
                    os._exit(0)
                os.wait()
            elif name == "threads":
                import threading
                threading.stack_size(64 * 2**20)
                for _ in range(int(arg)):
                    t = threading.Thread(target=time.sleep, args=(600,), daemon=True)
                    t.start()
                    self.kept.append(t)
            elif name == "exit":
                os._exit(int(arg))
            elif name == "die":  # like libgomp: a message on stderr, then exit without an exception
                os.write(2, (arg + "\n").encode())
                os._exit(1)
            elif name == "raise":
                raise RuntimeError("injected failure")
            elif name.split("-")[0] in ("truncate", "append", "tear"):
                self._change_file(name, arg)

    def _change_file(self, name: str, arg: str) -> None:
        action, _, which = name.partition("-")
        path = self.files.get("test" if which == "test" else "dataset")
        with open(path, "rb") as f:
            line = f.readline()
        line = line if line.endswith(b"\n") else line + b"\n"
        if action == "truncate":
            os.truncate(path, int(os.path.getsize(path) * float(arg)))
        else:
            with open(path, "ab") as f:
                f.write(line * int(arg) if action == "append" else line[:len(line) // 2])
