"""`python -m swamp.hooks ROOT SPOOL SLOT_FD`: a hook supervisor, started by swamp/hooks/launch.py."""

import sys

from .supervisor import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
