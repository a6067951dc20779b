"""Serving an exported linear model: the model file (``model_file``), and the lean
scoring process (``python -m svmcore.serve JOB.json``, ``scoring``) that reads svmlight
rows with the native parser and scores them with numpy.

Rule: imports only ``data`` and ``spec``, and in the scoring process only numpy and the
native library are loaded (no scipy or scikit-learn): its floor is the lean floor.
The worker writes the model file (``worker.model_export``); ``app.serving`` starts the
scoring process and reads its exact peak.
"""
