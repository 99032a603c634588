"""What jitdtypes tells about itself: `jitdtypes.stats()` (stats.py: the path each op took in this process)
and docs/OPS.md (ops_doc.py: the path each op would take, from discovery)."""
