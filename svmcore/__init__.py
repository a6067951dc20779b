"""svmcore: measured SVM training runs in a child process.

Never imports streamlit; usable from the CLI, tests and notebooks.
"""

from .config import RunConfig, validate
from .errors import ConfigError, DataError, SvmcoreError
from .knobs import KNOBS, Knob
from .store import RunRecord, RunStatus, Store, StoreError

__all__ = ["KNOBS", "Knob", "RunConfig", "validate", "ConfigError", "DataError", "SvmcoreError",
           "RunRecord", "RunStatus", "Store", "StoreError"]
