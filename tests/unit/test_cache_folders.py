"""Cache folders (``copies._cached_folder``): built in a temporary folder and renamed into place."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_building_a_cache_folder_does_not_import_shutil(tmp_path):
    """A lean run's first run on a file builds its held-out folder while it prepares; shutil
    (bz2, lzma and zlib come with it: 0.25 MiB that stayed resident through training) is
    imported only to clean up after a failed build."""
    code = ("import sys, os\nfrom svmcore.data.copies import _cached_folder\n"
            "def build(tmp):\n    open(os.path.join(tmp, 'x'), 'w').write('1')\n    return {'rows': 1}\n"
            "print(_cached_folder(os.path.join(sys.argv[1], 'f'), build)['rows'], 'shutil' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["1", "False"]
    assert (tmp_path / "f" / "x").read_text() == "1" and (tmp_path / "f" / "meta.json").exists()


def test_a_failed_build_leaves_nothing_behind(tmp_path):
    from svmcore.data.copies import _cached_folder

    def build(tmp):
        open(os.path.join(tmp, "part"), "w").write("half")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        _cached_folder(str(tmp_path / "f"), build)
    assert os.listdir(tmp_path) == []
