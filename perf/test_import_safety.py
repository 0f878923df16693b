"""perf/ imports without the perf extra (matplotlib, tqdm), so that pytest can always collect it;
`python -m perf` without them says which are missing and how to install them, in one line."""

from __future__ import annotations

import pkgutil
import subprocess
import sys
from pathlib import Path

import perf
from perf.__main__ import PERF_EXTRA

# Run in a fresh interpreter where importing the extra's modules fails, as on a machine without
# the extra (a None entry in sys.modules makes `import` raise and find_spec answer None).
BLOCK = "import sys\n" + "".join(f"sys.modules[{name!r}] = None\n" for name in PERF_EXTRA)


def python(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", BLOCK + code],
        capture_output=True,
        text=True,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        check=False,
    )


def test_every_perf_module_imports_without_the_perf_extra(tmp_path: Path) -> None:
    names = sorted(m.name for m in pkgutil.iter_modules(perf.__path__, "perf."))
    assert "perf.__main__" in names
    done = python("".join(f"import {name}\n" for name in names), Path(perf.__path__[0]).parent)
    assert done.returncode == 0, done.stderr


def test_the_harness_without_the_perf_extra_says_what_to_install(tmp_path: Path) -> None:
    out = tmp_path / "report"
    code = f"from perf.__main__ import main\nsys.exit(main(['--smoke', '--out', {str(out)!r}]))\n"
    done = python(code, Path(perf.__path__[0]).parent)
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "python -m perf: needs the perf extra (matplotlib, tqdm not installed): "
        "pip install -e '.[perf]'"
    ]
    assert not out.exists()  # it stopped before measuring anything
