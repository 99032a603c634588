"""OpInfo coverage: how many ops that support complex64 on CPU give the complex64 result in each 16-bit
complex dtype, in plain PyTorch and with jitdtypes (the same check as tests/test_opinfo_coverage.py)."""

from __future__ import annotations

import torch

import jitdtypes
from benchmarks.common import write_rows
from jitdtypes import dtypes
from tests import opinfo_samples as db
from tests.opinfo_exclusions import EXCLUDED
from tests.test_opinfo_coverage import OPS, check_op


def _outcomes(target) -> dict[str, str]:
    outcomes = {}
    for op in OPS:
        try:
            outcomes[db.op_id(op)] = "pass" if check_op(op, target) else "no reference"
        except Exception:  # noqa: BLE001 - a mismatch, or an error the op raised
            outcomes[db.op_id(op)] = "fail"
    return outcomes


def main() -> None:
    rows = []
    for target in dtypes.COMPLEX_TARGETS:
        name = dtypes.NAMES[target]
        with jitdtypes.disabled():
            plain = _outcomes(target)
        ours = _outcomes(target)
        eligible = [op for op, outcome in plain.items() if outcome != "no reference" or ours[op] != "no reference"]
        eligible = [op for op in eligible if ours[op] != "no reference"]
        rows.append({
            "dtype": name, "opinfos_supporting_complex64": len(OPS), "with_reference": len(eligible),
            "plain_pytorch_pass": sum(plain[op] == "pass" for op in eligible),
            "jitdtypes_pass": sum(ours[op] == "pass" for op in eligible),
            "excluded": len(EXCLUDED.get(name, {})),
            "failing_not_excluded": sorted(op for op in eligible if ours[op] != "pass" and op not in EXCLUDED[name]),
        })
    print(f"{'dtype':11} {'OpInfos':>8} {'usable':>7} {'plain torch':>12} {'jitdtypes':>10} {'excluded':>9}")
    for r in rows:
        print(f"{r['dtype']:11} {r['opinfos_supporting_complex64']:8} {r['with_reference']:7} "
              f"{r['plain_pytorch_pass']:12} {r['jitdtypes_pass']:10} {r['excluded']:9}"
              f"   ({100 * r['jitdtypes_pass'] / r['with_reference']:.1f}% vs {100 * r['plain_pytorch_pass'] / r['with_reference']:.1f}%)")
        if r["failing_not_excluded"]:
            print("   failing:", r["failing_not_excluded"])
    write_rows("coverage", [{k: v for k, v in r.items() if k != "failing_not_excluded"} for r in rows])
    print(f"\ntorch {torch.__version__}")


if __name__ == "__main__":
    main()
