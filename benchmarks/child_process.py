"""
The protocol between a benchmark and the fresh Python process (and driver JVM) each of its
runs gets: the child reports events as stdout lines ``@@{json}`` (:func:`emit`), the parent
reads them as they come, with a deadline (:func:`run_with_events`). Also :func:`feed`, how
a child makes an input file appear to Spark's file source.
"""
import json
import os
import queue
import shutil
import signal
import subprocess
import threading
import time
from typing import Callable, Dict, List, Optional, Tuple


def emit(**event) -> None:
    """Reports ``event`` (its ``event`` key names the kind) to the parent process."""
    print("@@" + json.dumps(event), flush=True)


def feed(src: str, folder: str) -> None:
    """Makes ``src`` appear whole in the source folder at once (the file source must never see
    half a file); a file already there stays."""
    dest = os.path.join(folder, os.path.basename(src))
    if os.path.exists(dest):
        return
    try:
        os.link(src, dest)
    except OSError:
        tmp = os.path.join(folder, "_" + os.path.basename(src) + ".tmp")  # '_' files are ignored
        shutil.copyfile(src, tmp)
        os.rename(tmp, dest)


def run_with_events(cmd: List[str], log, cwd: str, deadline: float,
                    on_event: Callable[[str, Dict], None],
                    on_other_line: Callable[[str], None]) -> Tuple[int, bool]:
    """Runs ``cmd`` (its stderr into the open file ``log``), handing each event it emits to
    ``on_event(kind, fields)`` and every other line of its stdout to ``on_other_line``, until
    it ends or ``deadline`` (a ``time.time()``) passes; returns (exit code, timed out)."""
    events: "queue.Queue[Optional[str]]" = queue.Queue()
    log.write("$ %s\n" % " ".join(cmd))
    log.flush()
    # Own session: on a timeout the whole group (Python and its JVM) is killed, nothing else.
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log, text=True, cwd=cwd,
                            start_new_session=True)

    def pump():
        for line in proc.stdout:
            events.put(line)
        events.put(None)

    threading.Thread(target=pump, daemon=True).start()
    timed_out = False
    while True:
        try:
            line = events.get(timeout=max(0.1, deadline - time.time()))
        except queue.Empty:
            timed_out = True
            break
        if line is None:
            break
        if not line.startswith("@@"):
            on_other_line(line)
            continue
        e = json.loads(line[2:])
        on_event(e.pop("event"), e)
    if timed_out:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return proc.wait(), timed_out
