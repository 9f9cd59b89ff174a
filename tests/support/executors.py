"""The executor JVMs of a ``local-cluster`` driver: its child processes, found in /proc
(Spark's API names executors, not their processes, and the tests SIGKILL processes)."""
import os
import time
from typing import Container, Dict

EXECUTOR_MAIN = "org.apache.spark.executor.CoarseGrainedExecutorBackend"


def executor_pids(driver_pid: int) -> Dict[str, int]:
    """Executor id -> pid of the executor JVMs whose parent is ``driver_pid``."""
    found = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/stat" % pid) as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                argv = f.read().decode(errors="replace").split("\0")
        except (OSError, IndexError, ValueError):
            continue  # gone meanwhile, or not ours to read
        if ppid == driver_pid and EXECUTOR_MAIN in argv:
            found[argv[argv.index("--executor-id") + 1]] = int(pid)
    return found


def driver_pid(spark) -> int:
    """The pid of ``spark``'s driver JVM."""
    return int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())


def wait_for_executors(driver: int, n: int, exclude: Container[str] = (),
                       timeout: float = 120) -> Dict[str, int]:
    """The executors of ``driver`` but ``exclude``, once there are ``n`` of them (what there
    is after ``timeout`` seconds otherwise)."""
    deadline = time.time() + timeout
    while True:
        pids = {e: p for e, p in executor_pids(driver).items() if e not in exclude}
        if len(pids) >= n or time.time() >= deadline:
            return pids
        time.sleep(0.5)
