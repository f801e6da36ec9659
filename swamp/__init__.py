"""swamp: a local, file-backed workflow engine with a command line."""

__version__ = "0.1.0"
