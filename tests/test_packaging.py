"""The wheel carries the CRDs and samples as package data, byte for byte as in `config/` (their
canonical copies), and an installation of it finds them without the source tree, so that
`placement demo` and the embedded `placement run` work from a regular install and the image.

The wheel is built offline with the build backend the test extra installs (hatchling); `.ci/run`
goes further and runs `placement demo` from the wheel installed into a fresh environment.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGED = "controllers/cli/data"
FOLDERS = ("crds", "samples")
PIP = (sys.executable, "-m", "pip", "--quiet")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [*PIP, "wheel", "--no-deps", "--no-build-isolation", "--wheel-dir", str(out), str(ROOT)],
        check=True,
        capture_output=True,
        stdin=subprocess.DEVNULL,
    )
    (built,) = out.glob("*.whl")
    return built


def files(folder: Path) -> dict[str, bytes]:
    """Every file under `folder`, by its path relative to it."""
    return {
        str(path.relative_to(folder)): path.read_bytes()
        for path in folder.rglob("*")
        if path.is_file()
    }


@pytest.mark.parametrize("folder", FOLDERS)
def test_the_wheel_carries_the_config_folder_as_it_is_in_the_repository(
    wheel: Path, folder: str
) -> None:
    prefix = f"{PACKAGED}/{folder}/"
    with zipfile.ZipFile(wheel) as archive:
        packed = {
            name.removeprefix(prefix): archive.read(name)
            for name in archive.namelist()
            if name.startswith(prefix)
        }
    assert packed == files(ROOT / "config" / folder)
    assert packed  # an empty folder on both sides would prove nothing


def test_the_wheel_has_no_top_level_config_package_and_no_tests(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        tops = {name.split("/", 1)[0] for name in archive.namelist()}
    assert {t for t in tops if not t.endswith(".dist-info")} == {
        "apis",
        "placement",
        "plugins",
        "controllers",
        "ocm_placement",
    }


def installed(wheel: Path, tmp_path: Path) -> Path:
    """The wheel installed (without dependencies) into a folder of its own; the folder."""
    site = tmp_path / "site"
    subprocess.run(
        [*PIP, "install", "--no-deps", "--target", str(site), str(wheel)],
        check=True,
        capture_output=True,
        stdin=subprocess.DEVNULL,
    )
    return site


def test_an_installed_wheel_serves_its_packaged_crds_and_samples(
    wheel: Path, tmp_path: Path
) -> None:
    site = installed(wheel, tmp_path)
    # Outside the source tree, with the installed copy first on the path (before the editable
    # install's source tree): what a regular install or the container image sees.
    probe = (
        "import json, controllers\n"
        "from controllers.cli.crds import CRD_DIR, SAMPLES_DIR\n"
        "from controllers.embedded.resources import load_resources\n"
        "print(json.dumps({'package': controllers.__file__, 'crds': str(CRD_DIR),\n"
        "    'samples': sorted(str(p.relative_to(SAMPLES_DIR))\n"
        "                      for p in SAMPLES_DIR.rglob('*') if p.is_file()),\n"
        "    'kinds': sorted({r.kind for r in load_resources()})}))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(site)}
    found = json.loads(
        subprocess.run(
            [sys.executable, "-c", probe],
            check=True,
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env=env,
            stdin=subprocess.DEVNULL,
        ).stdout
    )
    assert Path(found["package"]).is_relative_to(site)
    assert Path(found["crds"]) == site / PACKAGED / "crds"
    assert found["samples"] == sorted(files(ROOT / "config" / "samples"))
    assert {"Placement", "PlacementDecision", "ManagedCluster", "PodGroup"} <= set(found["kinds"])


VERBS = [
    ["run"],
    ["demo"],
    ["validate"],
    ["simulate"],
    ["explain"],
    ["scheduler", "run"],
    ["scheduler", "simulate"],
    ["webhook", "run"],
    ["webhook", "certs"],
]


def test_every_verb_and_the_consumer_api_work_from_the_installed_wheel(
    wheel: Path, tmp_path: Path
) -> None:
    # What the container image holds (its Dockerfile installs the same wheel): the hub
    # controller, both add-ons' commands and the add-on authors' API.
    site = installed(wheel, tmp_path)
    env = {**os.environ, "PYTHONPATH": str(site)}
    for verb in VERBS:
        done = subprocess.run(
            [sys.executable, "-m", "controllers.cli", *verb, "--help"],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env=env,
            stdin=subprocess.DEVNULL,
            check=False,
        )
        assert done.returncode == 0, (verb, done.stderr)
        assert "usage: placement" in done.stdout, verb
    probe = "import ocm_placement; print(ocm_placement.__file__, len(ocm_placement.__all__))"
    found = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        check=True,
        stdin=subprocess.DEVNULL,
    ).stdout.split()
    assert Path(found[0]).is_relative_to(site) and int(found[1]) >= 5


def test_the_image_copies_every_package_of_the_wheel() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    packages = project["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"]
    for package in packages:
        assert f"COPY {package} ./{package}\n" in dockerfile, package
