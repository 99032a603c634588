"""Which overloads lack 16-bit support on each device, learned by probing them once per torch build.

probe.py             runs one overload with arguments made up from its schema, in each dtype
runner.py            probes many overloads in child processes that survive crashes, hangs and broken devices
results.py           the two passes, the result file per device (cached, shipped, checked), what imports read
simulated_faults.py  test-only: the hazards of a GPU, met on any machine
shipped/             results for the torch builds CI tests, inside the package

What a result hands the registrar (jitdtypes/findings.py) sits below the rooms that read it, routing included;
discovery itself stands above routing: its second pass probes with the overrides installed.
"""

from .results import (CI_TORCH_BUILDS, ENV, Discovery, build_key, cache_path, check, load, load_or_discover,
                      load_or_discover_all, probed_at_import, shipped_path, stored, summary)

__all__ = ["CI_TORCH_BUILDS", "ENV", "Discovery", "build_key", "cache_path", "check", "load", "load_or_discover",
           "load_or_discover_all", "probed_at_import", "shipped_path", "stored", "summary"]
