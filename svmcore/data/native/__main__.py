"""``python -m svmcore.data.native``: build the native library now (make run/test do)."""

import sys

from svmcore.data.native import NativeBuildError, library_path

try:
    print(library_path())
except NativeBuildError as e:
    print(f"error: {e}", file=sys.stderr)
    sys.exit(1)
