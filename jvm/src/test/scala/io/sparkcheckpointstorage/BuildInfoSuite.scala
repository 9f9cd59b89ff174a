package io.sparkcheckpointstorage

import org.scalatest.funsuite.AnyFunSuite

class BuildInfoSuite extends AnyFunSuite {
  test("the jar reports the project version and the exact Spark it was built against") {
    assert(BuildInfo.version.matches("""\d+\.\d+\.\d+.*"""))
    assert(BuildInfo.sparkVersion == org.apache.spark.SPARK_VERSION)
    assert(BuildInfo.sparkLine == org.apache.spark.SPARK_VERSION.split('.').take(2).mkString("."))
    assert(BuildInfo.scalaBinaryVersion ==
      scala.util.Properties.versionNumberString.split('.').take(2).mkString("."))
    assert(BuildInfo.sparkLineMismatch == null)
  }
}
