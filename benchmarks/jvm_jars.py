"""
The JVM jar a benchmark needs beside the installed package: the running Spark line's
benchmarks jar (``jvm/src/bench/scala``, build.sbt's ``benchProject``), which holds the
benchmark-only classes (W5's ``CoordinatorLoad``, the stateful floor ``FloorStateStoreProvider``),
never shipped in the plugin jar or the wheel.
"""
import glob
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def newest_source() -> float:
    return max(os.path.getmtime(os.path.join(d, f))
               for d, _, files in os.walk(os.path.join(ROOT, "jvm")) for f in files)


def benchmarks_jar(tag: str = "bench") -> str:
    """
    The running Spark line's benchmarks jar. When the JVM sources are newer, the plugin jar
    (``dev/build-jar --spark LINE``, installed with the Python package) and the benchmarks jar
    are rebuilt, so that the benchmark runs the sources it measures.
    """
    import spark_checkpoint_storage
    from spark_checkpoint_storage.bundled_jar import artifact_id, running_spark_line

    line, scala = running_spark_line()
    project = "spark" + line.replace(".", "") + ("_213" if (line, scala) == ("3.5", "2.13") else "") + "Bench"
    pattern = os.path.join(ROOT, "target/benchmarks-spark-%s_%s/scala-%s/spark-checkpoint-storage-benchmarks-spark%s_%s-*.jar"
                           % (line, scala, scala, line, scala))
    jars = glob.glob(pattern)
    installed = os.path.join(os.path.dirname(os.path.abspath(spark_checkpoint_storage.__file__)), "jars")
    plugin = glob.glob(os.path.join(installed, "%s-*.jar" % artifact_id(line, scala)))
    if not jars or not plugin or min(os.path.getmtime(j) for j in jars + plugin) < newest_source():
        print("[%s] building the plugin and benchmarks jars of Spark %s" % (tag, line), file=sys.stderr, flush=True)
        subprocess.run([os.path.join(ROOT, "dev/build-jar"), "--spark", line], cwd=ROOT, check=True)
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                        "--force-reinstall", "."], cwd=ROOT, check=True)
        subprocess.run(["rm", "-rf", "build"] + glob.glob(os.path.join(ROOT, "python/*.egg-info")), cwd=ROOT)
        subprocess.run([os.path.join(ROOT, "dev/sbt"), "-warn", "%s/package" % project], cwd=ROOT, check=True)
        jars = glob.glob(pattern)
    if not jars:
        sys.exit("[%s] no benchmarks jar matches %s after building it" % (tag, pattern))
    return jars[0]
