import java.io.File

/** One Spark minor line the plugin is built for. */
final case class SparkLine(
    line: String,
    sparkVersion: String,
    /** The version of Spark's `tests` jars its JVM tests use. */
    testVersion: String,
    /** Scala binary version -> the Scala patch that line's Spark is built with. */
    scalaPatches: Map[String, String],
    defaultScala: String,
    /** The Java release the jar targets (the oldest Java that line's Spark runs on). */
    javaRelease: String,
    /** Compiled against the pinned pyspark wheel's jars instead of Maven Central's. */
    fromWheel: Boolean) {

  def number: (Int, Int) = SparkLines.number(line)
}

object SparkLines {
  val all: Seq[SparkLine] = Seq(
    SparkLine("3.5", "3.5.9", "3.5.9", Map("2.12" -> "2.12.18", "2.13" -> "2.13.8"), "2.12", "8", fromWheel = false),
    SparkLine("4.0", "4.0.4", "4.0.4", Map("2.13" -> "2.13.16"), "2.13", "17", fromWheel = false),
    SparkLine("4.1", "4.1.3", "4.1.3", Map("2.13" -> "2.13.17"), "2.13", "17", fromWheel = false),
    SparkLine("4.2", "4.2.0", "4.2.0", Map("2.13" -> "2.13.18"), "2.13", "17", fromWheel = false),
    // Spark 4.3.0 is on PyPI but not on Maven Central (its metadata stops at 4.2.0 as reached
    // from here): it compiles against the pinned pyspark wheel's jars, and its tests use
    // Spark 4.2.0's test classes.
    SparkLine("4.3", "4.3.0", "4.2.0", Map("2.13" -> "2.13.18"), "2.13", "17", fromWheel = true))

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
