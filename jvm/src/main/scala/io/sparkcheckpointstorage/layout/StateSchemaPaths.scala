package io.sparkcheckpointstorage.layout

import java.nio.charset.StandardCharsets
import java.util.regex.Matcher

import org.apache.hadoop.fs.{FileSystem, Path}

/**
 * The state schema files Spark's operator metadata of version 2 (transformWithState's,
 * `state/<op>/_metadata/v2/<batch>`) names by absolute path (`stateSchemaFilePaths`). A copy
 * of a checkpoint must name its own: Spark opens those files when the query resumes, and the
 * original may be moved or deleted.
 */
object StateSchemaPaths {
  // A quoted path ending in `state/<op>/_stateSchema/...`: its prefix is the checkpoint root.
  private val SchemaPath = "\"([^\"]*?)(/state/\\d+/_stateSchema/[^\"]*)\"".r

  /** `metadata` with every schema file path moved under `root` (a path as Spark writes it). */
  def relocate(metadata: String, root: Path): String = SchemaPath.replaceAllIn(metadata, m => {
    // Spark writes the paths as it got them: with a scheme, or as a bare path on the default file system.
    val prefix = if (m.group(1).contains(":")) root.toString else root.toUri.getPath
    Matcher.quoteReplacement("\"" + prefix.stripSuffix("/") + m.group(2) + "\"")
  })

  /** Rewrites the version-2 operator metadata files under `dir` to name schema files under `root`. */
  def relocateAll(fs: FileSystem, dir: Path, root: Path): Unit = {
    val state = new Path(dir, CheckpointPaths.State)
    if (!fs.exists(state)) return
    val files = fs.listFiles(state, true)
    while (files.hasNext) {
      val path = files.next().getPath
      val rel = path.toUri.getPath.stripPrefix(dir.toUri.getPath.stripSuffix("/") + "/")
      if (CheckpointPaths.operatorMetadataV2Of(rel).isDefined && !path.getName.startsWith(".")) {
        val in = fs.open(path)
        val text = try new String(org.apache.commons.io.IOUtils.toByteArray(in), StandardCharsets.UTF_8) finally in.close()
        val moved = relocate(text, root)
        if (moved != text) {
          // A checksum sidecar of the old text would fail every later read through Hadoop's checksums.
          fs.delete(new Path(path.getParent, s".${path.getName}.crc"), false)
          fs.delete(path, false)
          val out = fs.create(path, false)
          try out.write(moved.getBytes(StandardCharsets.UTF_8)) finally out.close()
        }
      }
    }
  }
}
