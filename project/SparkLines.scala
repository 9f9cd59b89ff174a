import java.io.File

import scala.io.Source

/** One Spark minor line the plugin is built for: a row of dev/spark-lines.tsv. */
final case class SparkLine(
    line: String,
    sparkVersion: String,
    /** The version of Spark's `tests` jars its JVM tests use. */
    testVersion: String,
    /** Scala binary version -> the Scala patch that line's Spark is built with, default first. */
    scalaPatches: Seq[(String, String)],
    /** The Java release the jar targets (the oldest Java that line's Spark runs on). */
    javaRelease: String,
    /** Compiled against the pinned pyspark wheel's jars instead of Maven Central's. */
    fromWheel: Boolean,
    /** Spark's suites (`Heap<name>Suite`, or `TransformWithState`) that `test` runs on this line. */
    sparkSuitesInCi: Seq[String]) {

  def number: (Int, Int) = SparkLines.number(line)
  def defaultScala: String = scalaPatches.head._1
  def scalaPatch(binary: String): String = scalaPatches.find(_._1 == binary).get._2
}

object SparkLines {
  /** The table every build and dev script reads the lines from. */
  val Table = "dev/spark-lines.tsv"

  /** The rows of `table`, oldest line first. */
  def read(table: File): Seq[SparkLine] = {
    val source = Source.fromFile(table, "UTF-8")
    val rows = try source.getLines().toList finally source.close()
    rows.filterNot(r => r.trim.isEmpty || r.startsWith("#")).map { row =>
      row.split('\t') match {
        case Array(line, spark, tests, scala, java, jars, _, _, suites) =>
          SparkLine(line, spark, tests,
            scala.split(',').toSeq.map(_.split('=') match {
              case Array(binary, patch) => binary -> patch
              case _ => sys.error(s"$table: '$scala' is not <binary>=<patch>[,...]")
            }),
            java, jars match {
              case "wheel" => true
              case "maven" => false
              case other => sys.error(s"$table: jars is maven or wheel, not '$other'")
            }, suites.split(',').toSeq.filter(_.nonEmpty))
        case _ => sys.error(s"$table: a row has not the 9 tab-separated columns of its header: $row")
      }
    }
  }

  val all: Seq[SparkLine] = read(new File(Table))

  def number(v: String): (Int, Int) = {
    val Array(major, minor) = v.split('.')
    (major.toInt, minor.toInt)
  }

  def named(line: String): SparkLine = all.find(_.line == line).getOrElse(sys.error(
    s"Spark line $line is not supported; set -Dspark.line to one of ${all.map(_.line).mkString(", ")}"))

  /** The sbt project of a line: spark43; spark35 (its default Scala), spark35_213. */
  def projectId(line: SparkLine, scalaBinary: String): String =
    "spark" + line.line.replace(".", "") +
      (if (scalaBinary == line.defaultScala) "" else "_" + scalaBinary.replace(".", ""))

  private val Folder = """scala-spark-(\d+\.\d+)(?:-(\d+\.\d+))?""".r

  /**
   * The shim folders `scala-spark-<from>[-<to>]` directly under `dir` whose range holds
   * `line`: `scala-spark-4.1-4.3` serves 4.1, 4.2 and 4.3; `scala-spark-3.5` serves 3.5 only.
   */
  def shimFolders(dir: File, line: SparkLine): Seq[File] = {
    val ord = implicitly[Ordering[(Int, Int)]]
    Option(dir.listFiles).toSeq.flatten.filter(_.isDirectory).filter { d =>
      d.getName match {
        case Folder(from, to) =>
          ord.lteq(number(from), line.number) && ord.lteq(line.number, number(Option(to).getOrElse(from)))
        case _ => false
      }
    }.sortBy(_.getName)
  }
}
