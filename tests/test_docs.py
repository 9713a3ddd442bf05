"""The documentation site: generated reference pages are current, every page is in the navigation, and the site
builds offline with mkdocs-material in strict mode (broken links fail)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import gen_docs  # noqa: E402


def _nav_pages(nav) -> list[str]:
    pages = []
    for item in nav:
        for value in item.values() if isinstance(item, dict) else [item]:
            pages += _nav_pages(value) if isinstance(value, list) else [value]
    return pages


def test_generated_pages_are_current():
    stale = [p for p, text in gen_docs.pages().items() if not p.is_file() or p.read_text() != text]
    assert stale == [], "run python tools/gen_docs.py"


def test_cli_reference_names_every_visible_command():
    text = gen_docs.cli_reference()
    for command in ("gpuweave cluster simulate", "gpuweave report", "gpuweave repro far", "gpuweave gpus"):
        assert f"## `{command}`" in text
    assert "## `gpuweave simulate`" not in text  # hidden aliases stay out
    assert "`--json`" in text and "`--quiet`, `-q`" in text


def test_every_docs_page_is_in_the_navigation():
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    nav = set(_nav_pages(config["nav"]))
    pages = {p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.md")}
    assert pages - nav == set() and nav - pages == set()


def test_site_builds_offline_in_strict_mode(tmp_path):
    pytest.importorskip("mkdocs", reason="the docs extra (mkdocs-material) is not installed")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    res = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    html = (tmp_path / "site" / "index.html").read_text()
    assert "Getting started" in html and "fonts.googleapis.com" not in html
    assert (tmp_path / "site" / "reference" / "cli" / "index.html").is_file()
