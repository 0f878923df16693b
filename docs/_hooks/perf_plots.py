"""MkDocs hook: the scale harness's plots, where the pages point at them.

`docs/performance.md` shows the plots of `perf/results*/` as `../perf/results/cycle.png`, the path
that also works on the repository's own file view. Those files live outside `docs/`, so MkDocs
would not know them (and `--strict` would fail on the links); this hook adds each one under its
`../perf/...` name, read from the repository and written to `perf/...` in the built site.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files, InclusionLevel

PLOT_FOLDERS = ("perf/results", "perf/results-pods")


def on_files(files: Files, config: Any) -> Files:
    docs_dir = Path(config["docs_dir"])
    root = docs_dir.parent
    for folder in PLOT_FOLDERS:
        for plot in sorted((root / folder).glob("*.png")):
            relative = plot.relative_to(root).as_posix()
            use_urls = config["use_directory_urls"]
            source = f"../{relative}"
            plot_file = File(
                source,
                str(docs_dir),
                config["site_dir"],
                use_urls,
                dest_uri=relative,
                inclusion=InclusionLevel.INCLUDED,
            )
            files.append(plot_file)
    return files
