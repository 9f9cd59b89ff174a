package io.sparkcheckpointstorage

import java.io.File
import java.nio.charset.StandardCharsets
import java.nio.file.Files

import scala.collection.mutable

import org.scalatest.funsuite.AnyFunSuite

/**
 * The main sources' package graph has no cycle, on every Spark line, and the shims know
 * nothing of the product: a newcomer can read the packages bottom up (docs/architecture.md
 * draws the graph), and a cycle that creeps in fails here, naming the references that make it.
 *
 * For each line of dev/spark-lines.tsv, the sources build.sbt compiles into that line's jar
 * (jvm/src/main/scala and the shim folders jvm/src/main/scala-spark-<from>[-<to>] whose range
 * holds the line, as project/SparkLines.scala picks them) are read as text. A package is one
 * a `package` clause declares there; p -> q when a file of p names something of q by an
 * import (multi-line, several clauses, `{A, B => C, _}`, a package imported by name) or by a
 * fully qualified reference in code (comments, scaladoc and string literals do not count; the
 * code in `${...}` of an interpolated string does), or uses a package it imported by name,
 * or a sub-package of its own, as a prefix (`storage.X`). A class name in a string (loaded
 * by reflection) is no edge.
 *
 * The repository is `spark.test.home` (build.sbt sets it for the forked test JVM, whose
 * working directory is the line's project folder under target/lines), else the first folder
 * from the working directory up that holds build.sbt.
 */
class PackageGraphSuite extends AnyFunSuite {
  import PackageGraphSuite._

  private lazy val repo: File = Option(findRepo()).getOrElse(
    fail("no build.sbt above " + sys.props("user.dir") + " and no spark.test.home"))
  private lazy val mainDir = new File(repo, "jvm/src/main")
  private lazy val lines: Seq[String] = readLines(new File(repo, "dev/spark-lines.tsv"))

  /** Every main source of every line (shared and shim folders), with its code (comments and strings blanked). */
  private lazy val mainCode: Seq[(File, String)] =
    (new File(mainDir, "scala") +: allShimFolders(mainDir)).flatMap(sources).map(f => f -> Graph.codeOnly(read(f)))

  private def graphOf(line: String): Graph =
    Graph.of(repo, new File(mainDir, "scala") +: shimFolders(mainDir, line))

  test("every shim folder of the main sources serves at least one line, and every line has its sources") {
    assert(lines.nonEmpty, "no line in dev/spark-lines.tsv")
    val all = allShimFolders(mainDir)
    assert(all.nonEmpty, s"no scala-spark-* folder under $mainDir")
    val served = lines.flatMap(shimFolders(mainDir, _)).toSet
    assert(all.filterNot(served.contains).isEmpty,
      s"shim folders no line of dev/spark-lines.tsv compiles: ${all.filterNot(served.contains).map(_.getName)}")
    lines.foreach(l => assert(graphOf(l).packages.nonEmpty, s"no package in the sources of Spark $l"))
  }

  test("comments, scaladoc and strings are no references; imports, qualified names and package prefixes are") {
    val text =
      """package a.b.c
        |
        |import a.b.{d, e => ee}
        |import a.b.f.{X,
        |  Y}
        |// a.b.g.Z in a comment
        |/** [[a.b.g.Z]] in scaladoc /* nested */ still a.b.g.Z */
        |object O {
        |  val s = "a.b.g.Z"
        |  val t = s"${a.b.h.W.name} and a.b.g.Z"
        |  val u = d.Thing
        |  val v = ee.Other
        |  val w = sub.Q
        |  val c = '"'
        |  val x = a.b.i.V
        |}
        |""".stripMargin
    val packages = Set("a.b.c", "a.b.c.sub", "a.b.d", "a.b.e", "a.b.f", "a.b.g", "a.b.h", "a.b.i")
    val (own, refs) = Graph.references(text, packages)
    assert(own == "a.b.c")
    assert(refs.map(_._1).toSet == Set("a.b.c.sub", "a.b.d", "a.b.e", "a.b.f", "a.b.h", "a.b.i"))
    assert(refs.filter(_._1 == "a.b.f").map(_._2).toSet == Set(4))
    assert(refs.filter(_._1 == "a.b.h").map(_._2).toSet == Set(10))
  }

  test("the graph finds a cycle and names the references that make it") {
    val g = Graph(Set("p", "q", "r"), Map(("p", "q") -> Seq(Ref("P.scala", 3, "import q.A")),
      ("q", "p") -> Seq(Ref("Q.scala", 5, "p.B")), ("q", "r") -> Seq(Ref("Q.scala", 6, "import r.C"))), Map.empty)
    assert(g.cycles == Seq(Seq("p", "q")))
    assert(g.describeCycles.contains("Q.scala:5 p.B"))
    assert(Graph(Set("p", "q"), Map(("p", "q") -> Seq(Ref("P.scala", 1, "q.X"))), Map.empty).cycles.isEmpty)
  }

  test("docs/architecture.md draws the newest line's package graph, every edge and no other") {
    val g = graphOf(lines.last)
    val drawn = Drawing.parse(read(new File(repo, "docs/architecture.md")))
    assert(drawn.nonEmpty, "no package graph in docs/architecture.md (a text block after '### The package graph')")
    if (drawn != Drawing.depsOf(g)) {
      fail(s"\ndocs/architecture.md's package graph is not Spark ${lines.last}'s; draw it so:\n" + Drawing.draw(g))
    }
  }

  test("every exception of the main sources is in a file of its own, named after it") {
    val misplaced = mainCode.flatMap { case (f, code) =>
      """(?m)^(?:final |abstract )?(?:case )?class (\w+Exception)\b""".r
        .findAllMatchIn(code).map(_.group(1))
        .filter(name => f.getName != name + ".scala").map(name => s"$name in ${f.getName}")
    }
    assert(misplaced.isEmpty, misplaced.mkString("\n", "\n", ""))
  }

  test("the driver is wired in DriverRuntime: the monitor is known to the coordinator alone, the coordinator's one static reached from a fixed list") {
    val ours = new File(mainDir, "scala/io/sparkcheckpointstorage")
    def using(pattern: String): Set[String] = mainCode.collect {
      case (f, code) if pattern.r.findFirstIn(code).isDefined => ours.toPath.relativize(f.toPath).toString
    }.toSet
    // What reports to the monitor is the coordinator it was given (Flink: CheckpointStatsTracker).
    val monitorUsers = using("""\bCheckpointMonitor\b""").filterNot(_.startsWith("monitoring/"))
    assert(monitorUsers == Set("coordinator/DriverRuntime.scala", "coordinator/CheckpointCoordinator.scala"),
      "\nonly DriverRuntime creates the monitor and only the coordinator reports to it; report through the " +
      s"coordinator instead from: ${(monitorUsers - "coordinator/DriverRuntime.scala" - "coordinator/CheckpointCoordinator.scala").toSeq.sorted.mkString(", ")}")
    // What Spark creates by class name or Python calls through py4j cannot be handed the
    // coordinator; the executor's client and the reader of a live checkpoint ask for it too.
    // Anything else is given it.
    val staticUsers = using("""\bDriverRuntime\s*\.\s*(?:coordinator|currentCoordinator)\b""")
    val allowed = Set("filemanager/StorageCheckpointFileManager.scala", "coordinator/CheckpointStorageQueryListener.scala",
      "coordinator/CoordinatorClient.scala", "reader/CheckpointReader.scala", "repair/CheckpointRepair.scala",
      "savepoint/Savepoints.scala")
    assert(staticUsers.nonEmpty && staticUsers.subsetOf(allowed),
      s"\nDriverRuntime.coordinator is read from ${(staticUsers -- allowed).toSeq.sorted.mkString(", ")}: hand " +
      "the coordinator to it instead (an entry point Spark or py4j creates by name may be added to this list)")
  }

  // One case per line: a cycle on any line fails, naming its packages and the references.
  readLinesOrEmpty().foreach { line =>
    test(s"Spark $line: the main sources' packages form no cycle") {
      val g = graphOf(line)
      assert(g.cycles.isEmpty, s"\nSpark $line: packages that depend on each other:\n" + g.describeCycles)
    }

    test(s"Spark $line: the shims import nothing of io.sparkcheckpointstorage") {
      val g = graphOf(line)
      val shimPackages = g.packages.filter(_.contains(".checkpointstorage.shim"))
      val known = g.edges.toSeq.filter { case ((from, to), _) =>
        shimPackages.contains(from) && to.startsWith("io.sparkcheckpointstorage")
      }
      assert(shimPackages.nonEmpty, "no shim package")
      assert(known.isEmpty, s"\nSpark $line: shims that know the product:\n" + known.sortBy(_._1).map {
        case ((from, to), refs) => s"  $from -> $to\n" + refs.map(r => s"      ${r.file}:${r.line} ${r.what}\n").mkString
      }.mkString)
    }
  }

  /** The lines, read while the suite is built (its tests are named after them). */
  private def readLinesOrEmpty(): Seq[String] = {
    val home = findRepo()
    if (home == null) Nil else readLines(new File(home, "dev/spark-lines.tsv"))
  }
}

object PackageGraphSuite {
  /** `spark.test.home`, else the first folder from the working directory up holding build.sbt; null if none. */
  def findRepo(): File = {
    val home = sys.props.get("spark.test.home").map(new File(_))
    home.orElse(Iterator.iterate(new File(sys.props("user.dir")).getAbsoluteFile)(_.getParentFile)
      .takeWhile(_ != null).find(d => new File(d, "build.sbt").isFile)).map(_.getCanonicalFile).orNull
  }

  /**
   * The graph as docs/architecture.md draws it: one row per package (short names), its level
   * (the longest path down to a package that depends on nothing of ours) and what it depends on.
   */
  object Drawing {
    private val Ours = "io.sparkcheckpointstorage"

    def short(p: String): String = p match {
      case Ours => "(root)"
      case _ if p.startsWith(Ours + ".") => p.substring(Ours.length + 1)
      case _ if p.endsWith(".shim") => "shim"
      case _ => p.stripPrefix("org.apache.")
    }

    def depsOf(g: Graph): Map[String, Set[String]] =
      g.packages.map(p => short(p) -> g.edges.keySet.collect { case (`p`, to) => short(to) }).toMap

    def draw(g: Graph): String = {
      val deps = depsOf(g)
      val level = mutable.Map[String, Int]()
      def levelOf(p: String): Int = level.getOrElseUpdate(p,
        if (deps(p).isEmpty) 0 else deps(p).map(levelOf).max + 1)
      deps.keys.toSeq.sortBy(p => (-levelOf(p), p)).map { p =>
        val d = deps(p).toSeq.sortBy(q => (-levelOf(q), q))
        f"${levelOf(p)}%3d  $p%-26s" + (if (d.isEmpty) "" else " -> " + d.mkString(", "))
      }.mkString("\n")
    }

    /** The drawing in `doc`: the first text block after "### The package graph"; a row wraps onto indented lines. */
    def parse(doc: String): Map[String, Set[String]] = {
      val after = doc.indexOf("### The package graph")
      if (after < 0) return Map.empty
      val start = doc.indexOf("```text\n", after)
      if (start < 0) return Map.empty
      val block = doc.substring(start + 8, doc.indexOf("\n```", start))
      val rows = mutable.ArrayBuffer[String]()
      block.split('\n').foreach { l =>
        if ("""^\s*\d+\s""".r.findPrefixOf(l).isDefined) rows += l.trim
        else if (l.trim.nonEmpty && rows.nonEmpty) rows(rows.length - 1) = rows.last + " " + l.trim
      }
      rows.map { r =>
        val body = r.dropWhile(_.isDigit).trim
        val arrow = body.indexOf(" -> ")
        // A note after two spaces or more ends the row: "(root)" is a package, "(anything else)" a note.
        def names(t: String): Set[String] = t.split("\\s{2,}")(0).split(',').map(_.trim).filter(_.nonEmpty).toSet
        if (arrow < 0) names(body).map(_ -> Set.empty[String])
        else Seq(body.substring(0, arrow).trim -> names(body.substring(arrow + 4)))
      }.flatMap(identity).toMap
    }
  }

  final case class Ref(file: String, line: Int, what: String)

  private val ShimFolder = """scala-spark-(\d+)\.(\d+)(?:-(\d+)\.(\d+))?""".r

  def readLines(table: File): Seq[String] =
    if (!table.isFile) Nil
    else read(table).split('\n').toSeq.filterNot(r => r.trim.isEmpty || r.startsWith("#")).map(_.split('\t')(0))

  def read(f: File): String = new String(Files.readAllBytes(f.toPath), StandardCharsets.UTF_8)

  private def number(v: String): (Int, Int) = { val Array(a, b) = v.split('.'); (a.toInt, b.toInt) }

  private def lteq(a: (Int, Int), b: (Int, Int)): Boolean = a._1 < b._1 || (a._1 == b._1 && a._2 <= b._2)

  def allShimFolders(mainDir: File): Seq[File] =
    Option(mainDir.listFiles).toSeq.flatten.filter(d => d.isDirectory && ShimFolder.pattern.matcher(d.getName).matches)
      .sortBy(_.getName)

  /** project/SparkLines.shimFolders: the scala-spark-<from>[-<to>] folders whose range holds `line`. */
  def shimFolders(mainDir: File, line: String): Seq[File] = allShimFolders(mainDir).filter { d =>
    d.getName match {
      case ShimFolder(a, b, c, e) =>
        val from = (a.toInt, b.toInt)
        val to = if (c == null) from else (c.toInt, e.toInt)
        lteq(from, number(line)) && lteq(number(line), to)
      case _ => false
    }
  }

  def sources(folder: File): Seq[File] = {
    val out = mutable.ArrayBuffer[File]()
    def walk(d: File): Unit = Option(d.listFiles).toSeq.flatten.sortBy(_.getName).foreach { f =>
      if (f.isDirectory) walk(f) else if (f.getName.endsWith(".scala") || f.getName.endsWith(".java")) out += f
    }
    walk(folder)
    out.toSeq
  }

  final case class Graph(packages: Set[String], edges: Map[(String, String), Seq[Ref]], filesOf: Map[String, Seq[String]]) {
    /** The strongly connected components of more than one package, each sorted, sorted by first member. */
    lazy val cycles: Seq[Seq[String]] = Graph.sccs(packages, edges.keySet).filter(_.size > 1)

    def describeCycles: String = cycles.map { c =>
      val inside = edges.toSeq.filter { case ((a, b), _) => c.contains(a) && c.contains(b) }.sortBy(_._1)
      s"  ${c.mkString(", ")}\n" + inside.map { case ((a, b), refs) =>
        s"    $a -> $b\n" + refs.map(r => s"        ${r.file}:${r.line} ${r.what}\n").mkString
      }.mkString
    }.mkString
  }

  /** The lexer's modes: code (brace depth, entered from an interpolation) or a string literal. */
  private sealed trait Mode
  private final case class Code(depth: Int, fromInterp: Boolean) extends Mode
  private final case class Str(triple: Boolean, interp: Boolean) extends Mode

  object Graph {
    private val Ident = """[A-Za-z_$][\w$]*"""
    private val PackageClause = ("""(?m)^[ \t]*package[ \t]+(?!object\b)(""" + Ident + """(?:\.""" + Ident + """)*)""").r
    private val ImportStart = """(?<![\w$.])import\s+""".r
    private val CharLiteral = """'(?:\\u+[0-9a-fA-F]{4}|\\[0-7]{1,3}|\\.|[^'\\\n])'""".r

    def of(repo: File, folders: Seq[File]): Graph = {
      val files = folders.flatMap(sources)
      val texts = files.map(f => f -> read(f))
      val packages = texts.flatMap { case (_, t) => PackageClause.findFirstMatchIn(codeOnly(t)).map(_.group(1)) }.toSet
      val edges = mutable.LinkedHashMap[(String, String), Seq[Ref]]()
      val filesOf = mutable.LinkedHashMap[String, Seq[String]]()
      texts.foreach { case (f, t) =>
        val rel = repo.getCanonicalFile.toPath.relativize(f.getCanonicalFile.toPath).toString
        val (own, refs) = references(t, packages)
        filesOf(own) = filesOf.getOrElse(own, Nil) :+ rel
        refs.filter(_._1 != own).foreach { case (to, line, what) =>
          edges((own, to)) = edges.getOrElse((own, to), Nil) :+ Ref(rel, line, what)
        }
      }
      Graph(packages, edges.toMap, filesOf.toMap)
    }

    /** The text with comments and string contents blanked (newlines kept); `${...}` stays code. */
    def codeOnly(text: String): String = {
      val out = new StringBuilder(text.length)
      val n = text.length
      // Modes: code (brace depth, entered from an interpolation) or string (triple, interpolated).
      var stack: List[Mode] = List(Code(0, fromInterp = false))
      def push(m: Mode): Unit = stack = m :: stack
      def pop(): Unit = stack = stack.tail
      def blank(s: String): Unit = s.foreach(c => out.append(if (c == '\n') '\n' else ' '))
      var i = 0
      while (i < n) {
        val c = text.charAt(i)
        stack.head match {
          case Code(depth, fromInterp) =>
            if (text.startsWith("//", i)) {
              val j = { val k = text.indexOf('\n', i); if (k < 0) n else k }
              blank(text.substring(i, j)); i = j
            } else if (text.startsWith("/*", i)) {
              var d = 1
              var j = i + 2
              while (j < n && d > 0) {
                if (text.startsWith("/*", j)) { d += 1; j += 2 }
                else if (text.startsWith("*/", j)) { d -= 1; j += 2 }
                else j += 1
              }
              blank(text.substring(i, j)); i = j
            } else if (c == '"') {
              var k = i
              while (k > 0 && (Character.isLetterOrDigit(text.charAt(k - 1)) || text.charAt(k - 1) == '_' ||
                text.charAt(k - 1) == '$')) k -= 1
              val triple = text.startsWith("\"\"\"", i)
              out.append(if (triple) "\"\"\"" else "\"")
              push(Str(triple, interp = k < i))
              i += (if (triple) 3 else 1)
            } else if (c == '\'') {
              CharLiteral.findPrefixMatchOf(text.substring(i, math.min(n, i + 12))) match {
                case Some(m) =>
                  out.append('\''); blank(m.matched.substring(1, m.matched.length - 1)); out.append('\'')
                  i += m.matched.length
                case None => out.append(c); i += 1
              }
            } else if (c == '{') {
              pop(); push(Code(depth + 1, fromInterp)); out.append(c); i += 1
            } else if (c == '}') {
              if (depth == 0 && fromInterp) { pop(); out.append(' ') }
              else { pop(); push(Code(math.max(0, depth - 1), fromInterp)); out.append(c) }
              i += 1
            } else { out.append(c); i += 1 }
          case Str(triple, interp) =>
            if (triple && text.startsWith("\"\"\"", i)) {
              var j = i
              while (j < n && text.charAt(j) == '"') j += 1
              out.append(" " * (j - i - 3)).append("\"\"\""); pop(); i = j
            } else if (!triple && c == '"') { out.append('"'); pop(); i += 1 }
            else if (!triple && c == '\\' && i + 1 < n) {
              out.append(if (text.charAt(i + 1) == '\n') " \n" else "  "); i += 2
            } else if (!triple && c == '\n') { out.append('\n'); pop(); i += 1 }
            else if (interp && text.startsWith("$$", i)) { out.append("  "); i += 2 }
            else if (interp && text.startsWith("${", i)) { out.append("  "); push(Code(0, fromInterp = true)); i += 2 }
            else { out.append(if (c == '\n') '\n' else ' '); i += 1 }
        }
      }
      out.toString
    }

    private def lineOf(text: String, pos: Int): Int = {
      var n = 1
      var i = 0
      while (i < pos) { if (text.charAt(i) == '\n') n += 1; i += 1 }
      n
    }

    /** The longest package that is `name` or a prefix of it at a dot. */
    def resolve(name: String, packages: Set[String]): Option[String] =
      packages.filter(p => name == p || name.startsWith(p + ".")).toSeq.sortBy(-_.length).headOption

    /** The statement from `start` (after `import `) to its end, and where it ends. */
    private def readImport(code: String, start: Int): (String, Int) = {
      var depth = 0
      var i = start
      var done = false
      while (i < code.length && !done) {
        val c = code.charAt(i)
        if (c == '{') depth += 1
        else if (c == '}') depth -= 1
        else if (depth == 0 && (c == ';' || c == '\n')) {
          val before = code.substring(start, i).trim
          val continued = before.endsWith(",") || before.endsWith(".") ||
            (c == '\n' && code.substring(i + 1).dropWhile(_.isWhitespace).startsWith("."))
          if (!continued) done = true
        }
        if (!done) i += 1
      }
      (code.substring(start, i), i)
    }

    private def splitTop(s: String): Seq[String] = {
      val parts = mutable.ArrayBuffer[String]()
      val cur = new StringBuilder
      var depth = 0
      s.foreach { c =>
        if (c == '{') depth += 1
        if (c == '}') depth -= 1
        if (c == ',' && depth == 0) { parts += cur.toString; cur.clear() } else cur.append(c)
      }
      parts += cur.toString
      parts.map(_.replaceAll("\\s+", "")).filter(_.nonEmpty).toSeq
    }

    /** The file's package, and (package, line, what) of each of its references to `packages`. */
    def references(text: String, packages: Set[String]): (String, Seq[(String, Int, String)]) = {
      val code = codeOnly(text)
      val clause = PackageClause.findFirstMatchIn(code)
      val own = clause.map(_.group(1)).getOrElse("")
      val refs = mutable.ArrayBuffer[(String, Int, String)]()
      val aliases = mutable.LinkedHashMap[String, String]()
      packages.foreach { p =>
        if (own.nonEmpty && p.startsWith(own + ".") && !p.substring(own.length + 1).contains(".")) {
          aliases(p.substring(own.length + 1)) = p
        }
      }
      val rest = code.toCharArray
      clause.foreach(m => (m.start until m.end).foreach(k => rest(k) = ' '))
      ImportStart.findAllMatchIn(code).toList.foreach { m =>
        val (body, end) = readImport(code, m.end)
        val line = lineOf(code, m.start)
        splitTop(body).foreach { raw =>
          val clauseText = raw.stripSuffix(";").stripPrefix("_root_.")
          val (prefix0, selectors) = """^(.*)\.\{(.*)\}$""".r.findFirstMatchIn(clauseText) match {
            case Some(s) => (s.group(1), s.group(2).split(',').toSeq.filter(_.nonEmpty))
            case None =>
              val dot = clauseText.lastIndexOf('.')
              if (dot < 0) (clauseText, Seq("_")) else (clauseText.substring(0, dot), Seq(clauseText.substring(dot + 1)))
          }
          val head = prefix0.split('.')(0)
          val prefix = if (aliases.contains(head) && resolve(prefix0, packages).isEmpty) aliases(head) + prefix0.substring(head.length)
            else prefix0
          selectors.foreach { s =>
            val arrow = s.indexOf("=>")
            val (orig, renamed) = if (arrow < 0) (s, "") else (s.substring(0, arrow), s.substring(arrow + 2))
            val wildcard = orig == "_" || orig == "*"
            val full = if (wildcard) prefix else prefix + "." + orig
            resolve(full, packages).foreach { target =>
              if (full == target && !wildcard) {
                val alias = if (renamed.nonEmpty) renamed else orig
                if (alias != "_") aliases(alias) = target
              }
              refs += ((target, line, "import " + full + (if (wildcard) "._" else "")))
            }
          }
        }
        (m.start until end).foreach(k => if (rest(k) != '\n') rest(k) = ' ')
      }
      val restText = new String(rest)
      val alternatives = packages.toSeq.sortBy(-_.length).map(java.util.regex.Pattern.quote).mkString("|")
      if (alternatives.nonEmpty) {
        ("""(?<![\w$.])(?:_root_\.)?((?:""" + alternatives + """)(?:\.""" + Ident + """)*)""").r
          .findAllMatchIn(restText).foreach { r =>
            resolve(r.group(1), packages).foreach(t => refs += ((t, lineOf(restText, r.start), r.group(1))))
          }
      }
      aliases.foreach { case (alias, p) =>
        ("""(?<![\w$.])""" + java.util.regex.Pattern.quote(alias) + """((?:\.""" + Ident + """)+)""").r
          .findAllMatchIn(restText).foreach { r =>
            resolve(p + r.group(1), packages).foreach(t => refs += ((t, lineOf(restText, r.start), alias + r.group(1))))
          }
      }
      (own, refs.toSeq)
    }

    /** Tarjan's strongly connected components, iterative. */
    def sccs(nodes: Set[String], edges: Set[(String, String)]): Seq[Seq[String]] = {
      val succ = edges.groupBy(_._1).map { case (k, v) => k -> v.map(_._2).toSeq.sorted }
      val index = mutable.Map[String, Int]()
      val low = mutable.Map[String, Int]()
      val onStack = mutable.Set[String]()
      val stack = mutable.ArrayBuffer[String]()
      val out = mutable.ArrayBuffer[Seq[String]]()
      var counter = 0
      def enter(v: String): Unit = { index(v) = counter; low(v) = counter; counter += 1; stack += v; onStack += v }
      nodes.toSeq.sorted.foreach { start =>
        if (!index.contains(start)) {
          enter(start)
          val work = mutable.ArrayBuffer[(String, Iterator[String])](start -> succ.getOrElse(start, Nil).iterator)
          while (work.nonEmpty) {
            val (node, it) = work.last
            var advanced = false
            while (!advanced && it.hasNext) {
              val w = it.next()
              if (!index.contains(w)) { enter(w); work += (w -> succ.getOrElse(w, Nil).iterator); advanced = true }
              else if (onStack.contains(w)) low(node) = math.min(low(node), index(w))
            }
            if (!advanced) {
              work.remove(work.length - 1)
              if (work.nonEmpty) low(work.last._1) = math.min(low(work.last._1), low(node))
              if (low(node) == index(node)) {
                val comp = mutable.ArrayBuffer[String]()
                var w = ""
                do { w = stack.remove(stack.length - 1); onStack -= w; comp += w } while (w != node)
                out += comp.toSeq.sorted
              }
            }
          }
        }
      }
      out.toSeq.sortBy(_.head)
    }
  }
}
