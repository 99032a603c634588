"""`python -m jitdtypes.cli`: the `jitdtypes` command, where the console script is not installed."""

import sys

from . import main

sys.exit(main())
