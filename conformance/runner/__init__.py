"""The conformance runner's helpers (matching, scenario loading, execution); no swamp imports."""
