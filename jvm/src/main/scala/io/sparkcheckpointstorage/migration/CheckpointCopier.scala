package io.sparkcheckpointstorage.migration

import java.nio.charset.StandardCharsets
import java.util.regex.Matcher

import org.apache.hadoop.fs.{FileSystem, Path}

import io.sparkcheckpointstorage.layout.{CheckpointPaths, SparkSettingKeys}
import io.sparkcheckpointstorage.reader.{CheckpointEntry, CheckpointReader}

/**
 * Copies what a checkpoint holds besides state data, up to a batch: the query's metadata,
 * its offset and commit logs, its sources' logs, and Spark's operator metadata and state
 * schema files under `state/`. The offset log entries are rewritten to record the target
 * provider: Spark takes the provider of a resumed query from there.
 */
object CheckpointCopier {
  private val ProviderEntry = confEntry(SparkSettingKeys.ProviderClass)

  private val StoreNumPartitions = "(\"numPartitions\"\\s*:\\s*)\\d+".r

  private def confEntry(key: String) =
    ("(\"" + java.util.regex.Pattern.quote(key) + "\"\\s*:\\s*\")([^\"]*)(\")").r

  /**
   * Copies into `target` (a directory on `targetFs`); returns (files, bytes). With
   * `numPartitions`, every offset log entry and Spark's operator metadata record that number
   * of state partitions instead of the source's (Spark's own repartition does the same).
   */
  def copy(layout: SourceCheckpoint, targetFs: FileSystem, target: Path, targetProvider: String,
      numPartitions: Option[Int] = None): (Int, Long) =
    copy(layout.reader, layout.entries, layout.batchId, targetFs, target, targetProvider, numPartitions)

  /** As above, from the `entries` of the checkpoint `reader` reads, up to batch `batchId`. */
  def copy(reader: CheckpointReader, entries: Seq[CheckpointEntry], batchId: Long, targetFs: FileSystem,
      target: Path, targetProvider: String, numPartitions: Option[Int]): (Int, Long) = {
    var files = 0
    var bytes = 0L
    val root = reader.root.stripSuffix("/")
    // Under state/ only Spark's operator metadata and schema files: the state itself is the
    // target provider's to write. Version-2 operator metadata is kept per batch: none of later ones.
    def metadataAtBatch(rel: String): Boolean = CheckpointPaths.isStateMetadata(rel) &&
      (CheckpointPaths.operatorMetadataV2Of(rel).isEmpty || rel.substring(rel.lastIndexOf('/') + 1).forall(_.isDigit) &&
        rel.substring(rel.lastIndexOf('/') + 1).toLong <= batchId)
    entries.filter(e => CheckpointPaths.inCopyAtBatch(e.relPath, batchId, metadataAtBatch)).foreach { e =>
      val content = reader.read(e).getOrElse(throw new MigrationException(
        s"${e.relPath} of the checkpoint $root disappeared while the migration copied it " +
          "(a running query deletes files it no longer needs); stop the query and migrate again."))
      def text = new String(content, StandardCharsets.UTF_8)
      val isOperatorMetadata = CheckpointPaths.operatorMetadataOf(e.relPath).isDefined ||
        CheckpointPaths.operatorMetadataV2Of(e.relPath).isDefined
      val out = e.relPath match {
        case rel if rel.startsWith(CheckpointPaths.Offsets + "/") =>
          val entry = recordProvider(text, targetProvider)
          numPartitions.fold(entry)(recordPartitions(entry, _)).getBytes(StandardCharsets.UTF_8)
        case _ if numPartitions.isDefined && isOperatorMetadata =>
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
    Seq(SparkSettingKeys.ShufflePartitions, SparkSettingKeys.StatePartitions).foldLeft(entry) { (e, key) =>
      confEntry(key).replaceAllIn(e, m => Matcher.quoteReplacement(m.group(1) + numPartitions + m.group(3)))
    }
}
