"""Triton kernel templates over (re, im) pairs, one op family per file; see common.py for the contract."""
