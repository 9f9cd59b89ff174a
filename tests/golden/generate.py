"""Writes the golden checkpoints of the running pyspark's Spark line into
tests/golden/spark-<line>/, replacing that line's folder (tests/golden/README.md).

    .venv/bin/python tests/golden/generate.py              # Spark 4.3
    .venv-spark3.5/bin/python tests/golden/generate.py     # Spark 3.5
"""
import os
import shutil
import sys

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, TESTS)
os.environ.setdefault("TZ", "UTC")
# The Python workers of applyInPandasWithState run this interpreter (pandas, pyarrow).
os.environ["PYSPARK_PYTHON"] = sys.executable

from support import golden  # noqa: E402
from support.realfs import spark_line  # noqa: E402


def main() -> None:
    out = os.path.join(golden.GOLDEN, "spark-" + spark_line())
    spark = golden.session()
    staging = out + ".new"
    shutil.rmtree(staging, ignore_errors=True)
    golden.write(spark, staging)
    spark.stop()
    # Only a complete set replaces the old one.
    shutil.rmtree(out, ignore_errors=True)
    os.rename(staging, out)
    files = [os.path.join(d, f) for d, _, fs in os.walk(out) for f in fs]
    print("%s: %d files, %d bytes" % (out, len(files), sum(os.path.getsize(f) for f in files)))


if __name__ == "__main__":
    main()
