"""scripts/layers (run by scripts/test) finds an import cycle, a lazy one included, and an import
from a lower layer to a higher one; and swamp/ has neither."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

LAYERS = Path(__file__).resolve().parents[1] / "scripts" / "layers"


def layers(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(LAYERS)], cwd=root, capture_output=True, text=True, timeout=60)


def test_swamp_has_no_cycle_and_no_upward_import() -> None:
    done = layers(LAYERS.parents[1])
    assert done.returncode == 0 and "no cycle, no upward import" in done.stdout, done.stdout + done.stderr


def test_a_lazy_cycle_and_an_upward_import_are_found(tmp_path: Path) -> None:
    for folder in ("domain", "app"):
        (tmp_path / "swamp" / folder).mkdir(parents=True)
        (tmp_path / "swamp" / folder / "__init__.py").write_text("")
    (tmp_path / "swamp" / "__init__.py").write_text("")
    (tmp_path / "swamp" / "domain" / "a.py").write_text("from . import b\n")
    (tmp_path / "swamp" / "domain" / "b.py").write_text("def f():\n    from . import a\n")
    (tmp_path / "swamp" / "domain" / "c.py").write_text("def g():\n    from ..app import x\n")
    (tmp_path / "swamp" / "app" / "x.py").write_text("")
    done = layers(tmp_path)
    assert done.returncode == 1
    assert "cycle: domain.a <-> domain.b" in done.stdout, done.stdout
    assert "swamp/domain/c.py:2 imports swamp.app" in done.stdout, done.stdout
