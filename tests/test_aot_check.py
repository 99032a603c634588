"""benchmarks/aot_check without a GPU: how it reads compiled code, and a fast subset of every family compiled for
sm_90 in both dtypes, so that a template that stops compiling for real GPUs fails the suite."""

import json
import os
import subprocess
import sys

from benchmarks import aot_check
from jitdtypes import dtypes


def test_access_widths_from_sass_mnemonics():
    sass = """
        /*0120*/  @!P1 LDG.E.128 R20, desc[UR6][R2.64] ;
        /*0180*/        LDG.E.U16 R16, desc[UR6][R2.64+0x800] ;
        /*0330*/        LDG.E.CONSTANT R7, desc[UR6][R6.64] ;
        /*0400*/        LDGSTS.E.BYPASS.LTC128B.128 [R1], desc[UR4][R2.64] ;
        /*0500*/        STG.E.64 desc[UR6][R2.64], R4 ;
        /*0600*/        STG.E desc[UR6][R2.64], R4 ;
    """
    assert aot_check._access_counts(aot_check._LOAD, sass) == {16: 1, 128: 2}
    assert aot_check._access_counts(aot_check._STORE, sass) == {32: 1, 64: 1}


def test_round_trips_count_register_writes_inside_dot_loops():
    ttgir = """
    %a = ttg.local_alloc %x : (tensor<64x64xf16>) -> !ttg.memdesc<64x64xf16>
    %r:2 = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %z) -> (tensor<64x64xf32>) : i32 {
      %t = ttg.local_load %buf : !ttg.memdesc<64x64xf16> -> tensor<64x64xf16>
      %s = ttg.local_alloc %t : (tensor<64x64xf16>) -> !ttg.memdesc<64x64xf16>
      %c = scf.if %p -> (tensor<64x64xf16>) {
        ttg.local_store %t, %buf : tensor<64x64xf16> -> !ttg.memdesc<64x64xf16>
        scf.yield %t : tensor<64x64xf16>
      } else {
        scf.yield %t : tensor<64x64xf16>
      }
      %d = ttng.warp_group_dot %a, %s, %acc {isAsync = true} : !ttg.memdesc<64x64xf16> * !ttg.memdesc<64x64xf16> -> tensor<64x64xf32>
      scf.yield %d : tensor<64x64xf32>
    }
    %q = scf.for %i = %c0 to %n step %c1 iter_args(%v = %w) -> (tensor<64xf32>) : i32 {
      %e = ttg.local_alloc %v : (tensor<64xf32>) -> !ttg.memdesc<64xf32>
      scf.yield %v : tensor<64xf32>
    }
    """
    assert aot_check.loop_round_trips(ttgir) == 2  # the dot loop's two writes; not the ones outside it


def test_subset_compiles_for_sm90_and_meets_the_criteria():
    """Every kernel compiles; 64-bit or wider accesses, 2 x SM count programs for 1M-element reductions and scans,
    no spills, asynchronous wgmma without per-K-step register round trips."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}  # compiled Triton, not the interpreter
    run = subprocess.run([sys.executable, "-m", "benchmarks.aot_check", "--subset", "--arch", "sm_90", "--json"],
                         capture_output=True, text=True, env=env, timeout=600)
    report = json.loads(run.stdout)
    kernels = report["kernels"]
    assert {k["family"] for k in kernels} == set(aot_check.CASES)
    assert {k["dtype"] for k in kernels} == set(dtypes.COMPLEX_BY_NAME)
    assert [f"{k['variant']} [{k['kernel']}]: {k['error']}" for k in kernels if not k["compiled"]] == []
    assert all(k["registers"] > 0 for k in kernels)
    assert [f"{k['family']} {k['variant']} [{k['kernel']}]: {k['failures']}" for k in kernels if k["failures"]] == []
    assert {f["family"] for f in report["fill"]} == {"reductions", "scans"}
    assert [f for f in report["fill"] if f["programs"] < 2 * aot_check.ARCHES["sm_90"].sm_count] == []
    gemm = [k for k in kernels if k["kernel"] == "complex_matmul_kernel" and k["tensor_core"].get("HGMMA")]
    assert gemm and all(max(k["wgmma_waits"]) >= 1 and k["loop_round_trips"] == 0 for k in gemm)
    assert run.returncode == 0, run.stdout[-2000:]
