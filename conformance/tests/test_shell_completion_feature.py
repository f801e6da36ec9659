"""The feature `shell-completion` (FORMAT.md §2) is found mechanically: `_SWAMP_COMPLETE` in the
scenario's or a step's env."""

from __future__ import annotations


def test_the_shell_completion_feature_is_found_mechanically():
    from swamp_conformance_runner.uses import undeclared

    tab = {"_SWAMP_COMPLETE": "bash_complete", "COMP_WORDS": "swamp ", "COMP_CWORD": "1"}
    assert undeclared({"features": ["core"], "steps": [{"run": [], "env": tab}]}) == {
        "shell-completion": ["step 1 has `_SWAMP_COMPLETE` in its env"]
    }
    assert undeclared({"features": ["core"], "env": tab, "steps": [{"run": []}]}) == {
        "shell-completion": ["`_SWAMP_COMPLETE` in its env"]
    }
    assert undeclared({"features": ["core"], "steps": [{"run": ["completion", "bash"]}]}) == {}
