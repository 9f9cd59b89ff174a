package io.sparkcheckpointstorage.storage

import java.util.Locale

import scala.util.control.NonFatal

import org.apache.hadoop.fs.Path
import org.apache.spark.network.util.JavaUtils

import io.sparkcheckpointstorage.layout.SparkSettingKeys
import io.sparkcheckpointstorage.storage.CheckpointStorageOptions._

/**
 * One setting of this package: its key, whether Spark reads it only when the session starts
 * (static), what it allows, what it means when unset (the words of docs/operations.md, shown
 * by the Checkpoints tab), and how a value is read. Reading a wrong value fails with an
 * [[IllegalCheckpointStorageArgumentException]] whose first line names the setting, the value
 * and what is allowed; every reader of a setting goes through here, so that the words are the
 * same wherever the value is read.
 */
sealed abstract class Setting[T](val key: String, val static: Boolean, val allowed: String,
    val unsetMeans: String) {
  /** The value of `raw`, or the error saying what is allowed. */
  def parse(raw: String): T

  protected def invalid(raw: String, why: String = "", cause: Throwable = null): Nothing =
    throw new IllegalCheckpointStorageArgumentException(
      s"Invalid value '$raw' for $key: $allowed${if (why.isEmpty) "" else s" ($why)"}.", cause)
}

/** A number of bytes, written as Spark writes sizes (`20k`, `5m`, `1048576`), within bounds. */
final class SizeSetting(key: String, static: Boolean, val min: Long, val max: Long, allowed: String,
    unsetMeans: String)
  extends Setting[Long](key, static, allowed, unsetMeans) {

  override def parse(raw: String): Long = {
    val bytes = try JavaUtils.byteStringAsBytes(raw.trim) catch {
      case NonFatal(e) => invalid(raw, "not a size", e)
    }
    if (bytes < min || bytes > max) invalid(raw, s"$bytes bytes")
    bytes
  }

  /** [[parse]] for settings whose maximum fits an `Int`. */
  def parseInt(raw: String): Int = parse(raw).toInt
}

/** One of a few names, in any case. */
final class ChoiceSetting(key: String, static: Boolean, val choices: Seq[String], unsetMeans: String)
  extends Setting[String](key, static, s"expected ${choices.mkString(" or ")}", unsetMeans) {

  override def parse(raw: String): String = {
    val name = raw.trim.toUpperCase(Locale.ROOT)
    if (!choices.contains(name)) invalid(raw)
    name
  }
}

/** `true` or `false`, in any case. */
final class BooleanSetting(key: String, static: Boolean, unsetMeans: String)
  extends Setting[Boolean](key, static, "expected true or false", unsetMeans) {
  override def parse(raw: String): Boolean = raw.trim.toLowerCase(Locale.ROOT) match {
    case "true" => true
    case "false" => false
    case _ => invalid(raw)
  }
}

/** A Hadoop path (`file:///...`, `hdfs://...`, `s3a://...`, or a local path). */
final class PathSetting(key: String)
  extends Setting[String](key, false, "expected a file system path or URI", unsetMeans = "none") {
  override def parse(raw: String): String = {
    if (raw.trim.isEmpty) invalid(raw, "empty")
    try new Path(raw.trim) catch { case NonFatal(e) => invalid(raw, e.getMessage, e) }
    raw.trim
  }
}

/** `driver`, `filesystem`, or a class; a class name is checked when the storage loads. */
final class StorageNameSetting extends Setting[String](Storage, false,
  "expected 'driver', 'filesystem', or the name of a class on the classpath implementing " +
    s"${classOf[CheckpointStorageFactory].getName} (or ${classOf[CheckpointStorage].getName}), " +
    "with a public no-argument constructor", unsetMeans = "filesystem with a checkpoint directory, else driver") {

  override def parse(raw: String): String = {
    if (raw.trim.isEmpty) invalid(raw, "empty")
    raw.trim
  }

  /** Fails as any other wrong value of this setting, with `why` and its cause. */
  def refuse(raw: String, why: String, cause: Throwable = null): Nothing = invalid(raw, why, cause)
}

/**
 * Every setting of this package, and where each is validated: as Flink validates a
 * storage's configuration when the storage is configured, static settings are checked when
 * the session starts (the driver plugin) and session settings when a query starts (the
 * query's checkpoint file manager, before its first batch is planned), so that a wrong value
 * fails the start, never a batch.
 */
object CheckpointStorageSettings {
  val StorageName = new StorageNameSetting
  val CheckpointPathSetting = new PathSetting(CheckpointPath)
  val SavepointPathSetting = new PathSetting(SavepointPath)
  val MaxStateSizeSetting = new SizeSetting(MaxStateSize, false, 1, Int.MaxValue,
    "expected a size of at least 1 byte and below 2g, such as 5m", unsetMeans = "5m")
  val FileStateSizeThresholdSetting = new SizeSetting(FileStateSizeThreshold, false, 0,
    FileSystemCheckpointStorage.MaxFileStateThreshold, "expected a size from 0 to 1m (1048576 bytes), such as 20k",
    unsetMeans = "20k")
  val WriteBufferSizeSetting = new SizeSetting(WriteBufferSize, false, 0, Int.MaxValue,
    "expected a size from 0 to below 2g, such as 4k", unsetMeans = "4k")
  val DriverMaxTotalInlineSizeSetting = new SizeSetting(DriverMaxTotalInlineSize, true, 1, Long.MaxValue,
    "expected a size of at least 1 byte, such as 512m", unsetMeans = "a quarter of the driver heap")
  // Far below a message's limit: a batch is one message, and its replies another.
  val ExecutorMaxRequestBatchSizeSetting = new SizeSetting(ExecutorMaxRequestBatchSize, true, 0, 64L << 20,
    "expected a size from 0 (each request on its own) to 64m, such as 1m", unsetMeans = "1m")
  val ExternalizedCleanupSetting = new ChoiceSetting(ExternalizedCleanup, true,
    Seq("RETAIN_ON_CANCELLATION", "DELETE_ON_CANCELLATION"), unsetMeans = "RETAIN_ON_CANCELLATION")
  val AsyncStateWritesSetting = new BooleanSetting(AsyncStateWrites, false, unsetMeans = "")

  val all: Seq[Setting[_]] = Seq(StorageName, CheckpointPathSetting, SavepointPathSetting, MaxStateSizeSetting,
    FileStateSizeThresholdSetting, WriteBufferSizeSetting, DriverMaxTotalInlineSizeSetting,
    ExecutorMaxRequestBatchSizeSetting, ExternalizedCleanupSetting, AsyncStateWritesSetting)

  /** The keys Python's `set_checkpoint_storage` writes (a storage set in code). */
  val AppKeys: Seq[String] =
    Seq("kind", "checkpointPath", "savepointPath", "maxStateSize", "fileStateSizeThreshold", "writeBufferSize")
      .map(AppPrefix + _)

  private val known: Set[String] = all.map(_.key).toSet ++ AppKeys

  /**
   * Checks every setting of this package among `settings` when the session starts: each value,
   * and that no unknown name sits under `spark.sql.streaming.checkpointStorage.` (a misspelt
   * setting would otherwise be ignored in silence).
   */
  def validateAtStartup(settings: Iterable[(String, String)]): Unit = {
    val ours = settings.filter { case (k, _) => isOurs(k) }.toMap
    checkNames(ours)
    all.foreach(s => ours.get(s.key).foreach(s.parse))
    ours.get(Storage).foreach(loadableName)
  }

  /**
   * Checks the session settings of a query starting with its checkpoint at `checkpointRoot`, and
   * returns the storage they give: every value, unknown names, and the storage itself (a named
   * class is loaded, the file system storage needs a directory).
   */
  def validateForQuery(settings: Iterable[(String, String)], checkpointRoot: String): CheckpointStorage = {
    val ours = settings.filter { case (k, _) => isOurs(k) }.toMap
    checkNames(ours)
    all.filterNot(_.static).foreach(s => ours.get(s.key).foreach(s.parse))
    settings.find(_._1 == SparkSettingKeys.ProviderClass).foreach { case (_, provider) => checkOwnProvider(provider) }
    CheckpointStorageLoader.load(ours.get _, Some(checkpointRoot))
  }

  private val OwnPackage = "io.sparkcheckpointstorage."

  /**
   * A misspelt provider of this package would fail the first batch's tasks with a
   * `ClassNotFoundException`; Spark's own providers and other packages' are Spark's to check.
   */
  private def checkOwnProvider(className: String): Unit = {
    val name = className.trim
    if (!name.startsWith(OwnPackage)) return
    val loader = Option(Thread.currentThread.getContextClassLoader).getOrElse(getClass.getClassLoader)
    try Class.forName(name, false, loader) catch {
      case e: ClassNotFoundException => throw new IllegalCheckpointStorageArgumentException(
        s"Invalid value '$className' for ${SparkSettingKeys.ProviderClass}: expected ${OwnPackage}provider.HeapStateStoreProvider " +
          "or another state store provider on the classpath (no such class).", e)
    }
  }

  /** A key of this package's settings (the storage's name, or under its prefix). */
  def isOurs(key: String): Boolean = key == Storage || key.startsWith(Prefix + ".")

  /** Unknown names are refused unless a storage class of the user's may read settings of its own. */
  private def checkNames(ours: Map[String, String]): Unit = {
    val customStorage = (ours.get(Storage) ++ ours.get(AppPrefix + "kind")).exists(n => !BuiltInNames(n))
    if (customStorage) return
    ours.keys.toSeq.sorted.find(k => !known(k)).foreach { unknown =>
      val suggestion = closest(unknown).map(k => s" Did you mean $k?").getOrElse("")
      throw new IllegalCheckpointStorageArgumentException(s"Unknown setting $unknown (value " +
        s"'${ours(unknown)}'): spark-checkpoint-storage has no such setting.$suggestion Its settings are " +
        s"${all.map(_.key).mkString(", ")}.")
    }
  }

  private val BuiltInNames: String => Boolean = n =>
    Set(DriverCheckpointStorage.Name, FileSystemCheckpointStorage.Name, "jobmanager")(n.trim.toLowerCase(Locale.ROOT))

  private def loadableName(name: String): Unit =
    if (!BuiltInNames(name)) CheckpointStorageLoader.storageClass(name.trim)

  /** The known key nearest to `key` by edit distance, if it is near enough to be a typo. */
  private def closest(key: String): Option[String] = {
    val (best, distance) = all.map(s => s.key -> editDistance(key.toLowerCase(Locale.ROOT), s.key.toLowerCase(Locale.ROOT)))
      .minBy(_._2)
    if (distance <= 3) Some(best) else None
  }

  private def editDistance(a: String, b: String): Int = {
    var previous = Array.tabulate(b.length + 1)(identity)
    for (i <- 1 to a.length) {
      val current = new Array[Int](b.length + 1)
      current(0) = i
      for (j <- 1 to b.length) {
        val substitution = previous(j - 1) + (if (a(i - 1) == b(j - 1)) 0 else 1)
        current(j) = math.min(substitution, math.min(previous(j), current(j - 1)) + 1)
      }
      previous = current
    }
    previous(b.length)
  }
}
