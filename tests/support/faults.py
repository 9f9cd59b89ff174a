"""The fault-injecting file system of the tests and benchmarks (jvm/src/test/java/.../faults,
built by ``dev/build-jar`` into ``target/fault-file-system/fault-file-system.jar``): the local
file system under the ``faulty:`` scheme, failing the operations a rules file or a random plan
names (``FaultPlan``'s doc has the format)."""
import os
from typing import Dict, Iterable, List, Optional, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
JAR = os.path.join(ROOT, "target", "fault-file-system", "fault-file-system.jar")
PACKAGE = "io.sparkcheckpointstorage.faults"


def jar() -> str:
    """The fault file system's jar; fails saying how to build it when it is missing."""
    if not os.path.isfile(JAR):
        raise FileNotFoundError("%s is missing: run dev/build-jar (dev/bootstrap does)" % JAR)
    return JAR


def uri(local_path: str) -> str:
    """``local_path`` on the fault-injecting file system."""
    return "faulty://" + os.path.abspath(local_path)


class Faults:
    """The plan of one test: a rules file the file system reads again whenever it changes, a
    folder where rules fired a given number of times are counted (across JVMs), and the log
    of every fault injected."""

    def __init__(self, folder: str, reset: bool = True):
        """``reset``: start with no rules (False: keep those another process armed)."""
        os.makedirs(folder, exist_ok=True)
        self.rules_file = os.path.join(folder, "rules")
        self.state_dir = os.path.join(folder, "fired")
        self.log = os.path.join(folder, "injected.log")
        if reset or not os.path.exists(self.rules_file):
            with open(self.rules_file, "a" if not reset else "w"):
                pass

    def spark_conf(self, random: Optional[Dict[str, str]] = None) -> Dict[str, str]:
        """The session settings that register the file system (driver and executors load its
        jar at JVM start) with this plan; ``random``: ``fs.faulty.random.*`` settings without
        the prefix, e.g. ``{"probability": "0.01", "seed": "7"}``."""
        conf = {
            "spark.driver.extraClassPath": jar(),
            "spark.executor.extraClassPath": jar(),
            "spark.hadoop.fs.faulty.impl": PACKAGE + ".FaultInjectingFileSystem",
            "spark.hadoop.fs.faulty.impl.disable.cache": "true",
            "spark.hadoop.fs.AbstractFileSystem.faulty.impl": PACKAGE + ".FaultInjectingFs",
            "spark.hadoop.fs.faulty.rules.file": self.rules_file,
            "spark.hadoop.fs.faulty.state.dir": self.state_dir,
            "spark.hadoop.fs.faulty.log": self.log,
        }
        for key, value in (random or {}).items():
            conf["spark.hadoop.fs.faulty.random." + key] = value
        return conf

    def arm(self, *rules: str) -> None:
        """Replaces the rules: each ``"<op> <kind> <path regex> [times]"``."""
        with open(self.rules_file, "w") as f:
            f.write("".join(r + "\n" for r in rules))

    def disarm(self) -> None:
        self.arm()

    def injected(self) -> List[Tuple[str, str, str]]:
        """Every fault injected so far: (op, kind, path)."""
        if not os.path.exists(self.log):
            return []
        with open(self.log) as f:
            return [tuple(line.rstrip("\n").split("\t")[:3]) for line in f if line.strip()]


def spark_conf_lines(conf: Dict[str, str]) -> Iterable[str]:
    """``conf`` as spark-submit ``--conf`` arguments."""
    for key, value in conf.items():
        yield "--conf"
        yield "%s=%s" % (key, value)
