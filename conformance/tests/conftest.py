"""Self-tests of the conformance runner (no swamp imports).

The parent conftest (conformance/conftest.py) has already made the runner importable as
``swamp_conformance_runner``.
"""

pytest_plugins = ["pytester"]
