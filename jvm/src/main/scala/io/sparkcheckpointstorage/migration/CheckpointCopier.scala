package io.sparkcheckpointstorage.migration

import java.nio.charset.StandardCharsets
import java.util.regex.Matcher

import org.apache.hadoop.fs.{FileSystem, Path}

import io.sparkcheckpointstorage.layout.CheckpointPaths

/**
 * Copies what a checkpoint holds besides state data, up to a batch: the query's metadata,
 * its offset and commit logs, its sources' logs, and Spark's operator metadata and state
 * schema files under `state/`. The offset log entries are rewritten to record the target
 * provider: Spark takes the provider of a resumed query from there.
 */
object CheckpointCopier {
  private val ProviderEntry =
    ("(\"" + java.util.regex.Pattern.quote(CheckpointLayout.ProviderConf) + "\"\\s*:\\s*\")([^\"]*)(\")").r

  /** Copies into `target` (a directory on `targetFs`); returns (files, bytes). */
  def copy(layout: CheckpointLayout, targetFs: FileSystem, target: Path, targetProvider: String): (Int, Long) = {
    var files = 0
    var bytes = 0L
    // Under state/ only Spark's operator metadata and schema files: the state itself is the
    // target provider's to write.
    layout.entries.filter(e => CheckpointPaths.inCopyAtBatch(e.relPath, layout.batchId,
        CheckpointPaths.isStateMetadata)).foreach { e =>
      val content = layout.reader.read(e).getOrElse(throw new MigrationException(
        s"${e.relPath} of the checkpoint ${layout.root} disappeared while the migration copied it " +
          "(a running query deletes files it no longer needs); stop the query and migrate again."))
      val out = if (e.relPath.startsWith(CheckpointPaths.Offsets + "/")) {
        recordProvider(new String(content, StandardCharsets.UTF_8), targetProvider).getBytes(StandardCharsets.UTF_8)
      } else content
      val stream = targetFs.create(new Path(target, e.relPath), false)
      try stream.write(out) finally stream.close()
      files += 1
      bytes += out.length
    }
    (files, bytes)
  }

  /** The offset log entry with `targetProvider` as the state store provider of the query. */
  def recordProvider(entry: String, targetProvider: String): String =
    ProviderEntry.replaceAllIn(entry, m => Matcher.quoteReplacement(m.group(1) + targetProvider + m.group(3)))
}
