"""svmcore: measured SVM training runs in a child process.

The library behind SVM Memory Lab; usable from the CLI, tests and notebooks, and it
never imports streamlit. Its layers are subpackages, each importing only the layers
below it (an import-linter contract in the tests keeps it so):

    cli       one module per subcommand; nothing imports it
    app       the dashboard's facade (Lab) and the remedies it teaches
    sweeps    grids of runs, the trade-off frontier, local and Dask executors
    predict   the memory model (pure), its calibration, recommend
    engine    the parent side of a run: spawn, sample, cap, cancel, classify, recover
    store     durable run history (SQLite), typed records, export   | independent of
    worker    the child process: training loop, models, solvers      | each other
    serve     an exported linear model's file, and the lean scoring process
    data      readers, compiled parser, synthetic data, sources, on-disk copies, batches
    spec      what a run is: knobs, validated config, errors, events, scores

This module imports nothing, so the worker process loads only what it needs.
"""
