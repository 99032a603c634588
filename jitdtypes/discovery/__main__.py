"""`JITDTYPES_DISABLE=1 python -m jitdtypes.discovery --ship`: regenerate this build's shipped CPU result."""

import sys

from jitdtypes.discovery import results

sys.exit(results.main(sys.argv[1:]))
