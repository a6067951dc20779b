"""Data: readers (svmlight, CSV, npz, raw text) with errors that name the line, the
compiled svmlight parser (``nativesvm``, in C over the ``native`` library, which also holds
the SGD and FTRL solvers' kernels), synthetic datasets, sources and the held-out rule, on-disk
copies (text, binary, held-out rows), batches, shuffling and the stream spill.

Rule: imports only ``spec``. Used by the worker (to train) and by the parent (to scan,
describe and forecast), so it never imports the store, the engine or the UI.
"""
