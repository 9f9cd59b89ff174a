"""Golden checkpoints (tests/golden, written by tests/golden/generate.py): every checkpoint
and savepoint an earlier version of this package wrote on this Spark line or an older one,
copied elsewhere and resumed as a user would (started on, or a canonical savepoint migrated
first) with one new input file and the flush, gives exactly the results stored beside it.
Those results depend on the state written before the copy, so a golden whose files are no
longer read right fails here: fix the reading, never regenerate the golden to pass."""
import json
import os
from typing import List

import pytest

from support import golden
from support.realfs import spark_line

#: settings of this module's Spark session (the shared ``spark`` fixture of conftest.py)
SPARK_CONF = golden.SPARK_CONF

LINE = spark_line()
#: the golden folders every checkout has (tests/golden/README.md): CI's oldest and newest line
COMMITTED_LINES = ["3.5", "4.3"]
KEPT = [s.name for s in golden.SCENARIOS if s.name not in golden.SOURCES_ONLY]


def cases() -> List:
    params = []
    for line in golden.golden_lines():
        marks = []
        if golden.line_key(line) > golden.line_key(LINE):
            marks = [pytest.mark.skip(reason="written on Spark %s, newer than this Spark %s: "
                                      "Spark resumes checkpoints of older lines, never of newer "
                                      "ones (no downgrades)" % (line, LINE))]
        for folder in golden.golden_folders(line):
            params.append(pytest.param(folder, marks=marks,
                                       id="spark-%s-%s" % (line, os.path.basename(folder))))
    return params


def test_every_line_has_its_goldens():
    lines = golden.golden_lines()
    assert set(COMMITTED_LINES) <= set(lines), lines
    for line in lines:
        assert set(KEPT) <= {os.path.basename(f) for f in golden.golden_folders(line)}, line


@pytest.mark.parametrize("folder", cases())
def test_golden_checkpoint_resumes_with_the_stored_results(spark, tmp_path, folder):
    golden.prepare(spark)
    with open(os.path.join(folder, "expected.json")) as f:
        expected = json.load(f)
    # As stored: tuples become lists.
    got = json.loads(json.dumps(golden.resume(spark, folder, str(tmp_path / "work"))))
    assert sorted(got) == sorted(expected["operators"])
    for name, want in expected["operators"].items():
        # Resumed after the golden's last committed batch, not from scratch...
        assert got[name]["first_batch"] == want["first_batch"], name
        # ...on its state: counts, totals, duplicates and join rows of batches 0-2 are in
        # these (generate.py refuses a golden whose results would be the same without them).
        assert got[name]["rows"] == want["rows"], name
