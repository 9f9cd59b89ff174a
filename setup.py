"""
Builds the plugin jar before packaging when the source tree has none, so that
``pip install .`` on a fresh checkout yields a package with the jar inside.
"""
import glob
import os
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
JARS = os.path.join(HERE, "python", "spark_checkpoint_storage", "jars")


class BuildPyWithJar(build_py):
    def run(self) -> None:
        if not glob.glob(os.path.join(JARS, "spark-checkpoint-storage-spark*.jar")):
            subprocess.check_call([os.path.join(HERE, "dev", "build-jar")], cwd=HERE)
        super().run()


setup(cmdclass={"build_py": BuildPyWithJar})
