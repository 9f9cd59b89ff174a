"""The main job, `python -m spark_checkpoint_storage demo`, on the Spark line of this venv:
Spark's default provider on Spark's own file manager (whose class moved in Spark 4.1), then
ours with each storage, the same state in every run. Run in every line's pytest share."""
import re
import subprocess
import sys

import pyspark

from conftest import assert_ok


def test_demo_runs_on_this_spark_line(subproc, tmp_path):
    # The demo's shape with fewer state partitions (200 by default), to keep CI short.
    done = subprocess.run([sys.executable, "-m", "spark_checkpoint_storage", "demo", "--batches", "2",
                           "--partitions", "20"], capture_output=True, text=True, timeout=600, env=subproc.env(),
                          cwd=str(tmp_path))
    out = assert_ok(done)
    assert "on Spark %s" % pyspark.__version__ in out
    assert "20 state partitions" in out
    for run in ("Spark default (HDFSBacked)", "FileSystemCheckpointStorage", "DriverCheckpointStorage"):
        assert re.search(r"\[%s\] batch 2/2: .* 20000 keys" % re.escape(run), out), run
    assert "same state (keys per batch) in every run: yes" in out

