"""The Checkpoints tab's batch rows against ``inspect``'s (tests/test_checkpoints_tab.py,
tests/test_checkpoints_history_server.py): their files, bytes and times.

The tab takes a batch's times from the driver's clock as it writes ``offsets/N`` and
``commits/N`` (no request to the store); ``inspect``, reading a checkpoint offline, takes the
modification times the file system recorded for them. The file system records a file's time
as its last byte is written, the driver just after the file is in place: the driver's time
is never earlier, and later by the time the write takes to finish (its rename, its upload)."""
from typing import Dict, Optional

#: How much later the driver's time of a log entry may be than the file system's: the end of
#: the write, on a loaded 2-core machine.
MAX_WRITE_END_MS = 2000


def assert_same_batch_times(row: Dict, batch: Dict, next_batch: Optional[Dict]) -> None:
    """``row``, a batch of the tab, shows the times ``inspect``'s ``batch`` read, as the driver
    saw them: its commit after the file system's and before the next batch was planned."""
    late = row["committedAtMs"] - batch["committedAtMs"]
    assert 0 <= late <= MAX_WRITE_END_MS, (row, batch)
    assert abs(row["offsetsToCommitMs"] - batch["durationMs"]) <= MAX_WRITE_END_MS, (row, batch)
    assert row["offsetsToCommitMs"] >= 0, row
    if next_batch is not None:
        assert row["committedAtMs"] <= next_batch["startedAtMs"] + MAX_WRITE_END_MS, (row, next_batch)


def assert_row_agrees(row: Dict, by_batch: Dict[int, Dict]) -> None:
    """``row``, a batch of the tab's history, agrees with ``inspect``'s batch of that id
    (``by_batch``: batch id -> batch): committed, with the same state files and bytes and the
    same times, all held by the query's one stateful operator over its 2 state partitions."""
    b = by_batch[row["batchId"]]
    assert b["committed"]
    assert (row["stateFiles"], row["inlineBytes"], row["fileBytes"]) == \
        (b["stateFiles"], b["inlineBytes"], b["fileBytes"]), row
    assert_same_batch_times(row, b, by_batch.get(row["batchId"] + 1))
    assert row["stateFiles"] == 2
    assert [(o["operator"], o["stateFiles"], o["inlineBytes"], o["fileBytes"]) for o in row["operators"]] == \
        [(0, 2, row["inlineBytes"], row["fileBytes"])]
