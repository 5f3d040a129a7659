"""The front door: the README fits a first read, links every docs page once, and every link
it or a docs page holds leads somewhere (#33). Its figures that come from code are checked
where the code is (tests/suite/test_dry_run.py, tests/test_gpu_check.py)."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def test_the_readme_is_one_read_and_links_every_page_once():
    text = (REPO / "README.md").read_text()
    assert len(text.splitlines()) <= 250
    linked = [m.group(1) for m in LINK.finditer(text)]
    for page in sorted((REPO / "docs").glob("*.md")):
        assert linked.count(f"docs/{page.name}") == 1, page.name
    for cmd in ("bash scripts/install", ".venv/bin/pytest tests -n auto", "--dry-run", "--replay"):
        assert cmd in text


def test_every_link_of_the_readme_and_the_docs_leads_somewhere():
    for doc in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        for m in LINK.finditer(doc.read_text()):
            target = m.group(1)
            if not target.startswith(("http://", "https://")):
                assert (doc.parent / target).exists(), f"{doc.name}: {target}"
