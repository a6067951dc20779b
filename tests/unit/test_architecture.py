"""The architecture stays what svmcore/__init__.py says: layers that import only
downwards (import-linter's contracts in .importlinter), no import cycle anywhere in
svmcore, and a worker process that loads only what it needs."""

import json
import os
import subprocess
import sys

import grimp

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_import_linter_contracts_are_kept():
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "lint-imports"), "--no-cache"],
                          cwd=ROOT, capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=ROOT))
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "0 broken" in proc.stdout
    for contract in ("the memory model prices a run without importing the worker KEPT",
                     "the UI imports the store's records only, never its internals KEPT",
                     "the parent side starts the worker and never imports it KEPT"):
        assert contract in proc.stdout, proc.stdout[-4000:]


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (or a module importing itself)."""
    index, low, on_stack, stack, out = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or v in edges.get(v, ()):
                out.append(sorted(comp))

    sys.setrecursionlimit(10_000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycle_in_svmcore():
    """Every import counts, also those inside functions: a cycle there is a cycle still."""
    graph = grimp.build_graph("svmcore", cache_dir=None)
    edges = {m: {i for i in graph.find_modules_directly_imported_by(m) if i.startswith("svmcore")}
             for m in graph.modules}
    # a package's __init__ is not an import of its own submodules
    for m in edges:
        edges[m] = {i for i in edges[m] if not m.startswith(i + ".")}
    assert _cycles(edges) == []


def test_the_cycle_finder_finds_cycles():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_the_worker_loads_neither_the_store_nor_the_engine():
    code = ("import sys, json; import svmcore.worker.main, svmcore.worker.training; "
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith('svmcore'))))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=ROOT), check=True)
    loaded = json.loads(proc.stdout)
    assert "svmcore.worker.training" in loaded
    assert "svmcore.worker.parallel" not in loaded  # dask only for data-parallel runs (workers > 1)
    assert not [m for m in loaded if m.split(".")[1:2] and m.split(".")[1] in ("store", "engine", "predict", "sweeps", "app", "cli")], loaded


def test_importing_svmcore_imports_nothing():
    proc = subprocess.run([sys.executable, "-c", "import sys, svmcore; print(sorted(m for m in sys.modules "
                           "if m.startswith('svmcore')))"], cwd=ROOT, capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=ROOT), check=True)
    assert proc.stdout.strip() == "['svmcore']"


def test_every_svmcore_name_the_benchmarks_import_exists():
    """bench/ imports svmcore's modules, often inside the function that needs them, where nothing runs
    them in the tests: a module moved or renamed left bench/memory_pool.py failing at its end
    (``svmcore.worker.lean``, gone with issue 41). Every such import, at any depth, must resolve."""
    import ast
    import importlib.util
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    missing = []
    for path in sorted((root / "bench").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("svmcore"):
                names = [(node.module, a.name) for a in node.names]
            elif isinstance(node, ast.Import):
                names = [(a.name, None) for a in node.names if a.name.startswith("svmcore")]
            else:
                continue
            for module, name in names:
                where = f"{path.name}:{node.lineno} {module}{'.' + name if name else ''}"
                try:
                    m = importlib.import_module(module)
                except ImportError:
                    missing.append(where)
                    continue
                if name and not hasattr(m, name) and importlib.util.find_spec(f"{module}.{name}") is None:
                    missing.append(where)
    assert not missing, missing
