package io.sparkcheckpointstorage.migration

import java.nio.charset.StandardCharsets
import java.util.regex.Matcher

import org.apache.hadoop.fs.{FileSystem, Path}

import io.sparkcheckpointstorage.coordinator.CheckpointCoordinator
import io.sparkcheckpointstorage.inspection.CheckpointEntry
import io.sparkcheckpointstorage.packs.PackFiles
import io.sparkcheckpointstorage.savepoint.Savepoints

/**
 * Copies what a checkpoint holds besides state data, up to a batch: the query's metadata,
 * its offset and commit logs, its sources' logs, and Spark's operator metadata and state
 * schema files under `state/`. The offset log entries are rewritten to record the target
 * provider: Spark takes the provider of a resumed query from there.
 */
object CheckpointCopier {
  private val Numbered = """^(offsets|commits)/(\d+)$""".r
  private val SourceLog = """^sources/[^/]+/(\d+)(?:\.compact)?$""".r
  private val ProviderEntry = confEntry(CheckpointLayout.ProviderConf)

  private val OperatorMetadata = """^state/\d+/_metadata/metadata$""".r
  private val StoreNumPartitions = "(\"numPartitions\"\\s*:\\s*)\\d+".r

  private def confEntry(key: String) =
    ("(\"" + java.util.regex.Pattern.quote(key) + "\"\\s*:\\s*\")([^\"]*)(\")").r

  /**
   * Copies into `target` (a directory on `targetFs`); returns (files, bytes). With
   * `numPartitions`, every offset log entry and Spark's operator metadata record that number
   * of state partitions instead of the source's (Spark's own repartition does the same).
   */
  def copy(layout: CheckpointLayout, targetFs: FileSystem, target: Path, targetProvider: String,
      numPartitions: Option[Int] = None): (Int, Long) = {
    var files = 0
    var bytes = 0L
    layout.entries.filter(e => keep(e, layout.batchId)).foreach { e =>
      val content = layout.reader.read(e).getOrElse(throw new MigrationException(
        s"${e.relPath} of the checkpoint ${layout.root} disappeared while the migration copied it " +
          "(a running query deletes files it no longer needs); stop the query and migrate again."))
      def text = new String(content, StandardCharsets.UTF_8)
      val out = e.relPath match {
        case rel if rel.startsWith("offsets/") =>
          val entry = recordProvider(text, targetProvider)
          numPartitions.fold(entry)(recordPartitions(entry, _)).getBytes(StandardCharsets.UTF_8)
        case OperatorMetadata() if numPartitions.isDefined =>
          StoreNumPartitions.replaceAllIn(text, m => Matcher.quoteReplacement(m.group(1) + numPartitions.get))
            .getBytes(StandardCharsets.UTF_8)
        case _ => content
      }
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

  /** The offset log entry with `numPartitions` as the query's shuffle and state partitions. */
  def recordPartitions(entry: String, numPartitions: Int): String =
    Seq(CheckpointLayout.ShufflePartitionsConf, CheckpointLayout.StatePartitionsConf).foldLeft(entry) { (e, key) =>
      confEntry(key).replaceAllIn(e, m => Matcher.quoteReplacement(m.group(1) + numPartitions + m.group(3)))
    }

  private def keep(e: CheckpointEntry, batch: Long): Boolean = {
    val name = e.relPath.substring(e.relPath.lastIndexOf('/') + 1)
    e.relPath match {
      // Hadoop's checksum sidecars: rewritten files would no longer match theirs, and the
      // target file system writes its own for whatever Spark writes next.
      case _ if name.startsWith(".") => false
      case Numbered(_, b) => b.toLong <= batch
      case SourceLog(b) => b.toLong <= batch
      case CheckpointCoordinator.MarkerFile | Savepoints.ManifestFile | Migration.ManifestFile => false
      case rel if rel.startsWith(PackFiles.DirName + "/") => false
      case rel if rel.startsWith(CanonicalSavepoints.StateDir + "/") => false
      // Under state/ only Spark's operator metadata and schema files: the state itself is the
      // target provider's to write.
      case rel if rel.startsWith("state/") => rel.split('/').exists(p => p == "_metadata" || p == "_stateSchema")
      case _ => true
    }
  }
}
