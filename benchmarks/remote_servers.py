"""The servers the benchmarks run against (HDFS, S3, Kafka) are the tests' own
(tests/support/realfs.py): one implementation of starting them, their settings and their
counters. The benchmarks import ``realfs`` from here, which puts tests/ on the import path once.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))

from support import realfs  # noqa: E402,F401
