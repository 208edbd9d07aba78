"""The wheel `python -m build` makes installs outside the repository and runs: `--version`, `--help`,
`models list`, and the demo handbook that ships inside it (found, indexed and searched from the install).

Fast and offline: the wheel is built without build isolation (hatchling and build come with the test
extra), installed with `--no-deps --no-index` into a fresh venv, and that venv reaches the dependencies
already installed in the test venv through a `.pth` line naming their site-packages. A plain path line,
not `import site`: the `.pth` files of the test venv (its editable install of this checkout) are not
processed, so `groove_tui` can only come from the wheel, which the test asserts.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.wheel


def _run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{cmd}: exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    assert importlib.util.find_spec("build") and importlib.util.find_spec("hatchling"), (
        "build and hatchling come with the test extra: pip install -e '.[test]'"
    )
    out = tmp_path_factory.mktemp("dist")
    _run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out), str(ROOT)], cwd=out)
    (found,) = out.glob("groove_tui-*.whl")
    return found


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    root = tmp_path_factory.mktemp("venv")
    env_dir = root / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    bin_dir = env_dir / ("Scripts" if os.name == "nt" else "bin")
    python = bin_dir / "python"
    _run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", str(wheel)], cwd=root)
    purelib = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    site = Path(_run([str(python), "-c", purelib], cwd=root).strip())
    (site / "test-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(
        HF_HUB_OFFLINE="1",
        HOME=str(root / "home"),
        XDG_CACHE_HOME=str(root / "cache"),
        XDG_DATA_HOME=str(root / "data"),
        XDG_CONFIG_HOME=str(root / "config"),
    )
    env.pop("GROOVE_TUI_INDEX_DIR", None)
    env.pop("GROOVE_TUI_MODEL_DIR", None)
    env.pop("GROOVE_TUI_CONFIG", None)
    return bin_dir, env


def test_the_wheel_carries_the_demo_handbook_its_golden_file_and_the_themes(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    notes = [n for n in names if n.startswith("groove_tui/demo/kb/") and n.endswith(".md")]
    shipped = {p.relative_to(ROOT).as_posix() for p in (ROOT / "groove_tui/demo/kb").rglob("*.md")}
    assert set(notes) == shipped and len(notes) > 20
    assert "groove_tui/demo/kb/golden-demo.yml" in names
    assert {"groove_tui/themes/groove.toml", "groove_tui/tui/groove.tcss"} <= set(names)
    assert not [n for n in names if n.startswith(("tests/", "benchmarks/", "docs/"))]


def test_the_installed_wheel_runs_outside_the_repository(installed, tmp_path):
    bin_dir, env = installed
    tool = str(bin_dir / "groove-tui")
    where = _run(
        [str(bin_dir / "python"), "-c", "import groove_tui; print(groove_tui.__file__)"], cwd=tmp_path, env=env
    )
    assert Path(where.strip()).is_relative_to(bin_dir.parent)  # the wheel's copy, not this checkout

    from importlib.metadata import version

    assert _run([tool, "--version"], cwd=tmp_path, env=env).strip() == f"groove-tui {version('groove-tui')}"
    assert "search" in _run([tool, "--help"], cwd=tmp_path, env=env)
    models = _run([tool, "models", "list"], cwd=tmp_path, env=env)
    assert "multilingual-e5-small-int8" in models and "ms-marco-l12" in models


def test_the_installed_demo_is_found_indexed_and_searched(installed, tmp_path):
    bin_dir, env = installed
    tool = str(bin_dir / "groove-tui")
    kb, golden = _run([tool, "demo", "--paths"], cwd=tmp_path, env=env).splitlines()
    assert Path(kb).is_relative_to(bin_dir.parent) and Path(golden).is_file()
    idx = str(tmp_path / "idx")
    _run([tool, "index", kb, "--index-dir", idx, "--model", "hashing-64", "--quiet"], cwd=tmp_path, env=env)
    hits = _run(
        [tool, "search", kb, "parent retriever", "--index-dir", idx, "--model", "hashing-64"], cwd=tmp_path, env=env
    )
    assert "parent" in hits.lower()
    scores = _run(
        [tool, "eval", kb, "--golden", golden, "--index-dir", idx, "--model", "hashing-64", "--no-history"],
        cwd=tmp_path,
        env=env,
    )
    assert "nDCG" in scores or "ndcg" in scores.lower()
