"""A Spark upgrade under running queries: checkpoints written on Spark 3.5 today (the file
system storage with own state files, the persistent driver storage, and a checkpoint of
Spark's default provider migrated to ours on 3.5) are resumed on Spark 4.3 and give exactly
the results resuming them on 3.5 gives. Each line runs in its own venv's Python (a process
each): the 3.5 one writes them as tests/golden/generate.py writes goldens, and resumes a
copy for the expected results; the 4.3 one resumes another copy."""
import json
import os
import subprocess
from typing import Dict, List

import pytest

from conftest import ROOT, assert_ok
from support.realfs import spark_line

OLD, NEW = "3.5", "4.3"
#: the venv of each line (dev/venv-line 3.5; dev/bootstrap makes .venv, the newest line's)
PYTHONS = {OLD: os.path.join(ROOT, ".venv-spark3.5", "bin", "python"),
           NEW: os.path.join(ROOT, ".venv", "bin", "python")}
SCENARIOS = ["filesystem", "driver", "migrated"]
#: of each scenario's operators (tests/test_golden_checkpoints.py resumes all of them,
#: applyInPandasWithState too, from 3.5's goldens on 4.3): kept short for CI's 3.5 job
OPERATORS = ["aggregation_update", "drop_duplicates", "join_inner"]


def line_python(line: str) -> str:
    python = PYTHONS[line]
    if not os.path.exists(python):
        pytest.skip("needs the venv of Spark %s (%s) to run that line's half of the upgrade; "
                    "make it with %s" % (line, os.path.relpath(python, ROOT),
                                         "dev/venv-line 3.5" if line == OLD else "dev/bootstrap"))
    return python


def run_line(line: str, args: List[str], cwd: str) -> subprocess.CompletedProcess:
    """support/golden.py's command line in that line's Python, in a driver process of its own."""
    python = line_python(line)
    env: Dict[str, str] = {k: v for k, v in os.environ.items()
                           if k not in ("PYSPARK_GATEWAY_PORT", "PYSPARK_GATEWAY_SECRET")}
    # The driver's Python workers (applyInPandasWithState) run that line's interpreter too.
    env.update(PYSPARK_PYTHON=python, PYSPARK_DRIVER_PYTHON=python, TZ="UTC",
               PYTHONPATH=os.path.join(ROOT, "tests"))
    result = subprocess.run([python, "-m", "support.golden"] + args, capture_output=True,
                            text=True, timeout=1200, env=env, cwd=cwd)
    with open(os.path.join(cwd, "spark-%s.log" % line), "a") as f:
        f.write(result.stdout + result.stderr)
    return result


@pytest.mark.timeout(1500)
@pytest.mark.skipif(spark_line() not in (OLD, NEW),
                    reason="runs in the job of Spark %s (dev/test), which has both lines' venvs; "
                    "the other lines' jobs would only repeat it" % OLD)
def test_checkpoints_written_on_3_5_resume_on_4_3_with_the_same_results(tmp_path):
    line_python(OLD), line_python(NEW)
    written = str(tmp_path / "written-on-3.5")
    assert_ok(run_line(OLD, ["write", written] + SCENARIOS + ["--operators", ",".join(OPERATORS)],
                       str(tmp_path)))
    folders = [os.path.join(written, s) for s in SCENARIOS]
    expected = {}
    for folder in folders:
        with open(os.path.join(folder, "expected.json")) as f:
            expected[folder] = json.load(f)
        assert expected[folder]["written_by"]["spark"].startswith(OLD + ".")
    results = str(tmp_path / "resumed-on-4.3.json")
    assert_ok(run_line(NEW, ["resume"] + folders + ["--results", results], str(tmp_path)))
    with open(results) as f:
        resumed = json.load(f)
    for folder in folders:
        scenario = os.path.basename(folder)
        want = expected[folder]["operators"]
        assert sorted(resumed[folder]) == sorted(want), scenario
        for name in want:
            # After the last batch written on 3.5, on its state: the same rows as on 3.5.
            assert resumed[folder][name] == want[name], (scenario, name)
    # The migration's output holds our provider's state files, none of Spark's default one.
    migrated = os.path.join(written, "migrated", "checkpoints")
    names = [n for d, _, ns in os.walk(migrated) for n in ns]
    assert [n for n in names if n.endswith(".heap-snapshot")], names
    assert not [n for n in names if n.endswith((".delta", ".snapshot"))], names
