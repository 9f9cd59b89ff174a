// spark-checkpoint-storage: the JVM half (state store provider, checkpoint file manager,
// driver coordinator, checkpoint storages), built against one exact Spark version.

// One sbt project per Spark line and Scala binary of dev/spark-lines.tsv: spark35 (a line's
// default Scala), spark35_213, spark40, ... Each compiles against its own Spark with that
// Spark's Scala patch (project/SparkLines.scala reads the table), from the shared sources plus the shim
// folders jvm/src/<main|test>/scala-spark-<from>[-<to>] whose range holds its line, into a
// target folder of its own. `dev/sbt spark35/test`, `dev/sbt spark43/package`, ...

// The pyspark wheel's jars for the line built from them (jars=wheel in the table): `provided`-like,
// on the compile and test classpaths, never in the pom.
val sparkJarsDir: File = sys.env.get("SPARK_JARS_DIR").map(file).getOrElse(
  (file(".venv/lib") * "python3*" / "site-packages" / "pyspark" / "jars").get.headOption
    .getOrElse(file(".venv/lib/python3/site-packages/pyspark/jars"))).getAbsoluteFile

// One version for the jar and the Python package, kept in the Python package.
val projectVersion = {
  val text = IO.read(file("python/spark_checkpoint_storage/_version.py"))
  "__version__ = \"([^\"]+)\"".r.findFirstMatchIn(text).map(_.group(1))
    .getOrElse(sys.error("no __version__ in python/spark_checkpoint_storage/_version.py"))
}

ThisBuild / organization := "io.sparkcheckpointstorage"
ThisBuild / version := projectVersion

// Spark's operator suites run on our provider (HeapStreamingOperatorSuites.scala and, from 4.2,
// HeapStreamingJoinSuites.scala); `test` runs those a line names in the table's `suites`
// column (README, "Spark's own suites"), SCS_SPARK_SUITES=all runs every one. The column's
// `TransformWithState` stands for Spark's TransformWithStateSuite on RocksDB through our file
// manager, once per storage (TransformWithStateOnStorageSuites.scala, 4.0+), of which `test`
// runs a subset (value, list and map state, both kinds of timers, a restart, the state data source, where
// RocksDB's files went; the suite tags every other test OutsideCiSubset). The other tests
// make the same file manager calls again (more restarts, more timer variants, Spark's own
// validation errors), so CI keeps one of each kind; SCS_SPARK_SUITES=all or `testOnly` runs
// them all. SCS_SPARK_SUITES=ci (dev/test's CI tier) runs the column's suites on the oldest
// and newest lines only: the middle lines' run in `dev/test --full`.
val sparkSuitesAll = sys.env.get("SCS_SPARK_SUITES").contains("all")
val sparkSuitesEndsOnly = sys.env.get("SCS_SPARK_SUITES").contains("ci")
val transformWithStateSuites = Seq("TransformWithStateOnFileSystemStorageSuite",
  "TransformWithStateOnDriverStorageSuite")
val sparkOperatorSuites = (Seq("HeapStreamingAggregationSuite", "HeapStreamingDeduplicationSuite",
  "HeapFlatMapGroupsWithStateSuite", "HeapStreamingInnerJoinSuite", "HeapStreamingOuterJoinSuite",
  "HeapStreamingFullOuterJoinSuite", "HeapStreamingLeftSemiJoinSuite") ++ transformWithStateSuites)
  .map("io.sparkcheckpointstorage.provider." + _)
// They run once per line, on its default Scala binary: Spark's operators over our provider
// are the same on both binaries of a line, whose Scala differences our own suites and
// Spark's StateStoreSuite cover.
def sparkSuitesInCi(line: SparkLine, scalaBinary: String): Seq[String] =
  if (scalaBinary != line.defaultScala) Nil
  else if (sparkSuitesEndsOnly && line != SparkLines.all.head && line != SparkLines.all.last) Nil
  else line.sparkSuitesInCi.flatMap {
    case "TransformWithState" => transformWithStateSuites
    case s => Seq(s"Heap${s}Suite")
  }.map("io.sparkcheckpointstorage.provider." + _)

// Spark's own test suites (StateStoreSuiteBase, StreamTest, the streaming operator suites)
// come from the line's `tests` jars, intransitive: the Spark main classes on the test
// classpath stay the line's own.
def sparkTestJars(line: SparkLine) = Seq("spark-core", "spark-catalyst", "spark-sql", "spark-sql-api",
    "spark-common-utils", "spark-tags").map { m =>
  ("org.apache.spark" %% m % line.testVersion % Test classifier "tests").intransitive()
}

// The line's Spark from Maven Central, exact version, `provided` (a line built from the
// wheel gets its Spark as unmanaged jars instead).
def sparkMainJars(line: SparkLine) =
  if (line.fromWheel) Nil else Seq("org.apache.spark" %% "spark-sql" % line.sparkVersion % Provided)

// The line's Spark from the pyspark wheel, for a line built from it (jars=wheel in the table).
def sparkWheelJars(line: SparkLine): Classpath = {
  val jars = if (!line.fromWheel) Nil else (sparkJarsDir * "*.jar").classpath
  if (line.fromWheel && jars.isEmpty) sys.error(s"no Spark jars in $sparkJarsDir: run dev/bootstrap (it installs " +
    s"pyspark ${line.sparkVersion} into .venv) or set SPARK_JARS_DIR to a Spark ${line.sparkVersion} jars folder")
  jars
}

// What every project of a line compiles against: the line's Spark and Scala patch, for the
// line's Java release.
def compiledAgainst(line: SparkLine, scalaBinary: String): Seq[Def.Setting[_]] = Seq(
  scalaVersion := line.scalaPatch(scalaBinary),
  // Spark ships the Scala library: keep it out of the published pom so
  // `--packages` resolves nothing but this jar.
  autoScalaLibrary := false,
  libraryDependencies ++= sparkMainJars(line),
  Compile / unmanagedJars ++= sparkWheelJars(line),
  // Spark 3.5 still runs on Java 8 (many platforms' default): its jar is Java 8 bytecode.
  javacOptions ++= Seq("--release", line.javaRelease),
  scalacOptions ++= Seq("-release", line.javaRelease, "-deprecation", "-feature", "-unchecked")
)

def lineProject(line: SparkLine, scalaBinary: String): Project = {
  val id = SparkLines.projectId(line, scalaBinary)
  val repo = file(".").getAbsoluteFile
  Project(id, repo / "target" / "lines" / id).settings(compiledAgainst(line, scalaBinary): _*).settings(
    // The Spark line is part of the artifact's name: spark-checkpoint-storage-spark3.5_2.12.
    name := s"spark-checkpoint-storage-spark${line.line}",
    moduleName := name.value,
    target := repo / "target" / s"spark-${line.line}_$scalaBinary",
    libraryDependencies ++= Seq(
      // Spark's own Scala library (from the pyspark jars) wins over the test tool's.
      ("org.scalatest" %% "scalatest" % "3.2.19" % Test).excludeAll(ExclusionRule("org.scala-lang")),
      "junit" % "junit" % "4.13.2" % Test
    ) ++ sparkTestJars(line),
    Compile / scalaSource := repo / "jvm" / "src" / "main" / "scala",
    Compile / unmanagedSourceDirectories ++= SparkLines.shimFolders(repo / "jvm" / "src" / "main", line),
    Test / unmanagedSourceDirectories ++= SparkLines.shimFolders(repo / "jvm" / "src" / "test", line),
    Compile / resourceDirectory := repo / "jvm" / "src" / "main" / "resources",
    // Spark's suites open checkpoint directories shipped as test resources with
    // `new File(getResource(...).toURI)`, which needs them on disk, not in a jar: unpack them
    // from the spark-sql tests jar ahead of it on the test classpath.
    Test / unmanagedClasspath += {
      val jar = (Test / update).value.select(configurationFilter(),
        moduleFilter(organization = "org.apache.spark", name = s"spark-sql_$scalaBinary"),
        artifactFilter(classifier = "tests")).head
      val out = target.value / s"spark-sql-${line.testVersion}-test-resources"
      val marker = out / ".unpacked"
      if (!marker.exists) {
        IO.delete(out)
        IO.unzip(jar, out, new sbt.io.SimpleFilter(_.startsWith("structured-streaming/")))
        IO.touch(marker)
      }
      Attributed.blank(out)
    },
    Test / scalaSource := repo / "jvm" / "src" / "test" / "scala",
    // The benchmarks' JVM classes have suites of their own here (their jar is benchProject's).
    Test / unmanagedSourceDirectories += repo / "jvm" / "src" / "bench" / "scala",
    // The fault-injecting file system (Java, line-neutral) serves the JVM suites too.
    Test / unmanagedSourceDirectories += repo / "jvm" / "src" / "test" / "java",
    Test / resourceDirectory := repo / "jvm" / "src" / "test" / "resources",
    // The jar tells the Python side which version (and Spark) it was built for.
    Compile / resourceGenerators += Def.task {
      val out = (Compile / resourceManaged).value / "spark-checkpoint-storage-version.properties"
      IO.write(out,
        s"version=${version.value}\nspark.version=${line.sparkVersion}\nspark.line=${line.line}\n" +
        s"scala.binary.version=${scalaBinaryVersion.value}\n")
      Seq(out)
    }.taskValue,
    Test / fork := true,
    Test / parallelExecution := false,
    Test / javaOptions ++= Seq(
      "-Xmx3g", "-Xss4m",
      // The suites' JVM lives minutes and runs many small queries: C1 alone and one GC thread
      // cost about a third less CPU than the JIT's and G1's defaults, at the same wall time
      // (what the tests' JVMs use too, tests/conftest.py).
      "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
      "-Dspark.test.home=" + repo,
      "-Dspark.testing=1",
      // SparkTestCompat tolerates linkage errors only where the tests jars are of another version.
      "-Dspark-checkpoint-storage.spark-tests-version=" + line.testVersion,
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
      sparkSuitesAll || !sparkOperatorSuites.contains(name) || sparkSuitesInCi(line, scalaBinary).contains(name)),
    Test / test / testOptions ++= (if (sparkSuitesAll) Nil
      else Seq(Tests.Argument(TestFrameworks.ScalaTest, "-l", "io.sparkcheckpointstorage.OutsideCiSubset"))),
    publishMavenStyle := true,
    // Scaladoc takes longer than compiling: the local publish (for --packages) goes without.
    Compile / packageDoc / publishArtifact := false,
    // dev/build-jar republishes the same version to ~/.m2 on every build.
    publishM2Configuration := publishM2Configuration.value.withOverwrite(true),
    pomIncludeRepository := { _ => false },
    // Spark provides everything the jar needs: `--packages` resolves this jar alone.
    pomPostProcess := { node =>
      import scala.xml.{Elem, Node}
      import scala.xml.transform.{RewriteRule, RuleTransformer}
      new RuleTransformer(new RewriteRule {
        override def transform(n: Node): Seq[Node] = n match {
          case e: Elem if e.label == "dependencies" => Nil
          case other => other
        }
      }).transform(node).head
    }
  )
}

// The JVM classes only benchmarks/ uses (the stateful floor FloorStateStoreProvider, W5's
// CoordinatorLoad), jvm/src/bench/scala, as a jar of their own per line beside the plugin's:
// never in the plugin jar or the wheel, and no tests jar to ship. `dev/sbt spark43Bench/package`
// (benchmarks/jvm_jars.py builds it): target/benchmarks-spark-<line>_<scala>/scala-<scala>/.
def benchProject(line: SparkLine, scalaBinary: String, plugin: Project): Project = {
  val id = SparkLines.projectId(line, scalaBinary) + "Bench"
  val repo = file(".").getAbsoluteFile
  // The plugin's Spark is `provided`, so not passed on: compiledAgainst gives it again.
  Project(id, repo / "target" / "lines" / id).dependsOn(plugin).settings(compiledAgainst(line, scalaBinary): _*).settings(
    name := s"spark-checkpoint-storage-benchmarks-spark${line.line}",
    moduleName := name.value,
    target := repo / "target" / s"benchmarks-spark-${line.line}_$scalaBinary",
    Compile / scalaSource := repo / "jvm" / "src" / "bench" / "scala",
    Compile / unmanagedSourceDirectories := Seq((Compile / scalaSource).value),
    publish / skip := true
  )
}

// Every line's projects, from the table: the plugin's, and its benchmarks' beside it.
lazy val sparkLines = new CompositeProject {
  override lazy val componentProjects: Seq[Project] =
    SparkLines.all.flatMap(line => line.scalaPatches.flatMap { case (binary, _) =>
      val plugin = lineProject(line, binary)
      Seq(plugin, benchProject(line, binary, plugin))
    })
}

// The fault-injecting file system of the tests (jvm/src/test/java/.../faults), as a jar of its
// own for the end-to-end tests and benchmarks of every line: Java 8 bytecode against the
// oldest line's Hadoop API (Spark 3.5's 3.3.4), no Scala, never in the plugin jar or wheel.
// dev/build-jar builds it: target/fault-file-system/fault-file-system.jar.
lazy val faultFileSystem = Project("faultFileSystem", file("target/lines/faultFileSystem")).settings(
  name := "fault-file-system",
  crossPaths := false,
  autoScalaLibrary := false,
  target := file(".").getAbsoluteFile / "target" / "fault-file-system",
  Compile / javaSource := file(".").getAbsoluteFile / "jvm" / "src" / "test" / "java",
  Compile / unmanagedSourceDirectories := Seq((Compile / javaSource).value),
  Compile / scalaSource := file(".").getAbsoluteFile / "target" / "fault-file-system" / "no-scala",
  // javac reads the public fields of FileSystem, whose Log type is commons-logging.
  libraryDependencies ++= Seq("org.apache.hadoop" % "hadoop-client-api" % "3.3.4" % Provided,
    "commons-logging" % "commons-logging" % "1.1.3" % Provided),
  javacOptions ++= Seq("--release", "8"),
  Compile / packageBin / artifactPath := target.value / "fault-file-system.jar",
  publish / skip := true,
  publishM2 / skip := true
)

// The root builds nothing itself: name a line's project (dev/sbt spark43/test).
lazy val root = (project in file("."))
  .aggregate()
  .settings(publish / skip := true, publishM2 / skip := true, Compile / sources := Nil, Test / sources := Nil)
