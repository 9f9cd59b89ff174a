// spark-checkpoint-storage: the JVM half (state store provider, checkpoint file manager,
// driver coordinator, checkpoint storages), built against one exact Spark version.

val sparkVersion = "4.3.0"
val sparkMinor = sparkVersion.split('.').take(2).mkString(".")
val scala213 = "2.13.18"

// Spark 4.3.0 is on PyPI but not on Maven Central (its metadata stops at 4.2.0 as reached
// from here), so the exact 4.3.0 jars come from the pinned pyspark wheel in the project
// venv. They are `provided`-like: on the compile and test classpaths, never in the pom.
val sparkJarsDir: File = sys.env.get("SPARK_JARS_DIR").map(file).getOrElse(
  file(".venv/lib/python3.11/site-packages/pyspark/jars"))

// One version for the jar and the Python package, kept in the Python package.
val projectVersion = {
  val text = IO.read(file("python/spark_checkpoint_storage/_version.py"))
  "__version__ = \"([^\"]+)\"".r.findFirstMatchIn(text).map(_.group(1))
    .getOrElse(sys.error("no __version__ in python/spark_checkpoint_storage/_version.py"))
}

ThisBuild / organization := "io.sparkcheckpointstorage"
ThisBuild / version := projectVersion
ThisBuild / scalaVersion := scala213

// Spark's own test suites (StateStoreSuiteBase, StreamTest, the streaming operator suites)
// come from the `tests` jars. Those exist on Maven Central only up to `sparkTestVersion`,
// so the Heap*Suite classes in jvm/src/test/scala/.../provider that extend Spark's suites
// are compiled against the 4.3.0 main jars plus these older test classes. Intransitive: the
// only Spark main classes on the test classpath stay the 4.3.0 ones from the pyspark jars.
val sparkTestVersion = "4.2.0"
val sparkTestJars = Seq("spark-core", "spark-catalyst", "spark-sql", "spark-sql-api",
    "spark-common-utils", "spark-tags").map { m =>
  ("org.apache.spark" %% m % sparkTestVersion % Test classifier "tests").intransitive()
}

// Spark's operator suites run on our provider (HeapStreamingOperatorSuites.scala) take about
// 16 minutes in all; `dev/sbt test` runs those in `sparkSuitesInCi` (README, "Spark's own
// suites"), SCS_SPARK_SUITES=all runs every one.
val sparkSuitesAll = sys.env.get("SCS_SPARK_SUITES").contains("all")
val sparkOperatorSuites = Seq("HeapStreamingAggregationSuite", "HeapStreamingDeduplicationSuite",
  "HeapFlatMapGroupsWithStateSuite", "HeapStreamingInnerJoinSuite", "HeapStreamingOuterJoinSuite",
  "HeapStreamingFullOuterJoinSuite", "HeapStreamingLeftSemiJoinSuite")
  .map("io.sparkcheckpointstorage.provider." + _)
val sparkSuitesInCi = Seq("HeapStreamingAggregationSuite", "HeapFlatMapGroupsWithStateSuite",
    "HeapStreamingFullOuterJoinSuite")
  .map("io.sparkcheckpointstorage.provider." + _)

lazy val root = (project in file("."))
  .settings(
    name := "spark-checkpoint-storage",
    // Spark ships the Scala library: keep it out of the published pom so
    // `--packages` resolves nothing but this jar.
    autoScalaLibrary := false,
    libraryDependencies ++= Seq(
      // Spark's own Scala library (from the pyspark jars) wins over the test tool's.
      ("org.scalatest" %% "scalatest" % "3.2.19" % Test).excludeAll(ExclusionRule("org.scala-lang")),
      "junit" % "junit" % "4.13.2" % Test
    ) ++ sparkTestJars,
    Compile / unmanagedJars ++= {
      val jars = (sparkJarsDir * "*.jar").classpath
      if (jars.isEmpty) sys.error(s"no Spark jars in $sparkJarsDir: run dev/bootstrap (it installs " +
        s"pyspark $sparkVersion into .venv) or set SPARK_JARS_DIR to a Spark $sparkVersion jars folder")
      jars
    },
    Compile / scalaSource := baseDirectory.value / "jvm" / "src" / "main" / "scala",
    Compile / unmanagedSourceDirectories +=
      baseDirectory.value / "jvm" / "src" / "main" / s"scala-spark-$sparkMinor",
    Compile / resourceDirectory := baseDirectory.value / "jvm" / "src" / "main" / "resources",
    // Spark's suites open checkpoint directories shipped as test resources with
    // `new File(getResource(...).toURI)`, which needs them on disk, not in a jar: unpack them
    // from the spark-sql tests jar ahead of it on the test classpath.
    Test / unmanagedClasspath += {
      val jar = (Test / update).value.select(configurationFilter(),
        moduleFilter(organization = "org.apache.spark", name = "spark-sql_2.13"),
        artifactFilter(classifier = "tests")).head
      val out = target.value / s"spark-sql-$sparkTestVersion-test-resources"
      val marker = out / ".unpacked"
      if (!marker.exists) {
        IO.delete(out)
        IO.unzip(jar, out, new sbt.io.SimpleFilter(_.startsWith("structured-streaming/")))
        IO.touch(marker)
      }
      Attributed.blank(out)
    },
    Test / scalaSource := baseDirectory.value / "jvm" / "src" / "test" / "scala",
    Test / resourceDirectory := baseDirectory.value / "jvm" / "src" / "test" / "resources",
    javacOptions ++= Seq("--release", "17"),
    scalacOptions ++= Seq("-release:17", "-deprecation", "-feature", "-unchecked"),
    // The jar tells the Python side which version (and Spark) it was built for.
    Compile / resourceGenerators += Def.task {
      val out = (Compile / resourceManaged).value / "spark-checkpoint-storage-version.properties"
      IO.write(out,
        s"version=${version.value}\nspark.version=$sparkVersion\nscala.binary.version=${scalaBinaryVersion.value}\n")
      Seq(out)
    }.taskValue,
    Test / fork := true,
    Test / parallelExecution := false,
    Test / javaOptions ++= Seq(
      "-Xmx3g", "-Xss4m",
      "-Dspark.test.home=" + baseDirectory.value,
      "-Dspark.testing=1",
      "--add-opens=java.base/java.lang=ALL-UNNAMED",
      "--add-opens=java.base/java.lang.invoke=ALL-UNNAMED",
      "--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
      "--add-opens=java.base/java.io=ALL-UNNAMED",
      "--add-opens=java.base/java.net=ALL-UNNAMED",
      "--add-opens=java.base/java.nio=ALL-UNNAMED",
      "--add-opens=java.base/java.util=ALL-UNNAMED",
      "--add-opens=java.base/java.util.concurrent=ALL-UNNAMED",
      "--add-opens=java.base/java.util.concurrent.atomic=ALL-UNNAMED",
      "--add-opens=java.base/jdk.internal.ref=ALL-UNNAMED",
      "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
      "--add-opens=java.base/sun.nio.cs=ALL-UNNAMED",
      "--add-opens=java.base/sun.security.action=ALL-UNNAMED",
      "--add-opens=java.base/sun.util.calendar=ALL-UNNAMED",
      "-Djdk.reflect.useDirectMethodHandle=false",
      "-Dio.netty.tryReflectionSetAccessible=true"
    ),
    Test / testOptions += Tests.Argument(TestFrameworks.ScalaTest, "-oDF"),
    // `test` only: `testOnly` of a named suite runs it whatever this says.
    Test / test / testOptions += Tests.Filter(name =>
      sparkSuitesAll || !sparkOperatorSuites.contains(name) || sparkSuitesInCi.contains(name)),
    publishMavenStyle := true,
    // dev/build-jar republishes the same version to ~/.m2 on every build.
    publishM2Configuration := publishM2Configuration.value.withOverwrite(true),
    pomIncludeRepository := { _ => false }
  )
