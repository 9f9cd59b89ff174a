package io.sparkcheckpointstorage.monitoring

import java.io.FileNotFoundException
import java.nio.charset.StandardCharsets
import java.util.concurrent.{ArrayBlockingQueue, ConcurrentHashMap, ThreadPoolExecutor, TimeUnit}
import java.util.concurrent.atomic.AtomicLong

import scala.collection.mutable
import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileStatus, Path}
import org.apache.spark.scheduler.SparkListenerEvent
import org.slf4j.LoggerFactory

import io.sparkcheckpointstorage.fileio.FileSystemOperations
import io.sparkcheckpointstorage.layout.{CheckpointPaths, OffsetLogEntry, SparkSettingKeys}
import io.sparkcheckpointstorage.storage.CheckpointStorageSettings

/**
 * The inline state files a batch's commit took (relative path -> bytes), and the name of the
 * pack it wrote them to under `state-packs/` ("" when its state is not persistent).
 */
final case class PackedBatch(files: Seq[(String, Long)], packName: String, packBytes: Long)

/**
 * The state a batch's commit holds: what its packs took (None: no pack, or the checkpoint holds
 * no inline state), and the state files of their own of its version that the executors wrote
 * (relative path -> bytes).
 */
final case class CommittedState(packed: Option[PackedBatch], ownFiles: Seq[(String, Long)])

/**
 * Collects the checkpoints tab's facts on the driver and posts them on Spark's listener bus.
 *
 * The query's thread only hands over what it already knows (a few references, no I/O); the
 * monitor's own thread does the rest (the query id from the checkpoint's metadata, the times
 * of a batch's log entries) and posts the event. A batch's state files come from its commit
 * ([[CommittedState]]), never from a listing of the checkpoint.
 * Its queue is bounded: when a very slow file system lets it fill, facts are dropped and
 * counted ([[dropped]]), never waited for.
 *
 * @param post posts an event on Spark's listener bus
 */
final class CheckpointMonitor(post: SparkListenerEvent => Unit, hadoopConf: Configuration,
    sparkConf: Map[String, String], heldInlineBytes: () => Long, maxTotalInlineSize: Long,
    queueSize: Int = 10000) {
  import CheckpointMonitor._

  private val executor = {
    val e = new ThreadPoolExecutor(1, 1, 60L, TimeUnit.SECONDS, new ArrayBlockingQueue[Runnable](queueSize),
      (r: Runnable) => { val t = new Thread(r, "checkpoint-storage-monitor"); t.setDaemon(true); t },
      new ThreadPoolExecutor.DiscardPolicy {
        override def rejectedExecution(r: Runnable, e: ThreadPoolExecutor): Unit = dropped.incrementAndGet()
      })
    e.allowCoreThreadTimeOut(true)
    e
  }
  /** Facts dropped because the monitor's queue was full. */
  val dropped = new AtomicLong()
  /** Roots whose query is starting: settings captured, waiting for the commit log's first listing. */
  private val starting = new ConcurrentHashMap[String, Starting]()
  /** Started roots whose query id was not yet on disk: posted with their first batch. */
  private val deferred = new ConcurrentHashMap[String, (Starting, Option[(Long, Long)])]()
  /** Checkpoint root -> (batch, when this driver wrote its offset log entry). */
  private val offsetsWrittenAt = new ConcurrentHashMap[String, (Long, Long)]()
  /** Checkpoint root -> query id (its metadata), read once per root by the monitor's thread. */
  private val queryIds = new ConcurrentHashMap[String, String]()

  private def submit(body: => Unit): Unit = executor.execute(() =>
    try body catch { case NonFatal(e) => log.debug(s"Checkpoint monitoring skipped a fact: $e") })

  /** A query on `root` is starting with these Hadoop (session) settings; `sparkConf` tells their origin. */
  def queryStarting(root: String, sessionSettings: Iterable[(String, String)], storage: String): Unit =
    starting.put(root, Starting(settingsOf(sessionSettings, sparkConf), sessionSettings.collectFirst {
      case (SparkSettingKeys.ProviderClass, v) => v
    }.getOrElse(SparkSettingKeys.DefaultProvider), sessionSettings.collectFirst {
      case (SparkSettingKeys.ShufflePartitions, v) => v
    }.flatMap(v => scala.util.Try(v.toInt).toOption).getOrElse(200), storage, System.currentTimeMillis()))

  /**
   * Spark listed `root`'s commit log (`listing`): the first time after the query started, the
   * last entry is the batch it restores from.
   */
  def commitLogListed(root: String, listing: Array[FileStatus]): Unit = {
    val s = starting.remove(root)
    if (s == null) return
    val last = listing.flatMap(f => scala.util.Try(f.getPath.getName.toLong).toOption.map(_ -> f.getModificationTime))
      .sortBy(_._1).lastOption
    submit(postStarted(root, s, last))
  }

  /**
   * The first batch `batchId` of a query whose start no log listing told (Spark lists a new
   * query's logs lazily): batches follow each other, so it restored from `batchId - 1`.
   */
  private def firstBatch(root: String, batchId: Long): Unit = {
    // After the start's own task (the queue is FIFO): a start deferred there is posted now.
    submit {
      val d = deferred.remove(root)
      if (d != null) postStarted(root, d._1, d._2)
    }
    val s = starting.remove(root)
    if (s == null) return
    submit {
      val previous = if (batchId <= 0) None else {
        val fs = FileSystemOperations.raw(new Path(root).getFileSystem(hadoopConf))
        try Some(batchId - 1 -> fs.getFileStatus(new Path(root, CheckpointPaths.commitEntry(batchId - 1))).getModificationTime)
        catch { case _: FileNotFoundException => None }
      }
      postStarted(root, s, previous)
    }
  }

  private def postStarted(root: String, s: Starting, last: Option[(Long, Long)]): Unit = {
    queryIds.remove(root)
    val queryId = queryIdOf(root)
    // Spark lists a new query's offset log before it writes its metadata: the first batch,
    // which comes after, posts the start.
    if (queryId.isEmpty) { deferred.put(root, (s, last)); return }
    // A restored query runs with the provider and partitions its offset log records.
    val recorded = last.flatMap { case (b, _) => recordedConf(root, b) }.getOrElse(Map.empty)
    post(CheckpointQueryStarted(queryId, root, s.storage,
      recorded.getOrElse(SparkSettingKeys.ProviderClass, s.provider),
      recorded.get(SparkSettingKeys.ShufflePartitions).flatMap(v => scala.util.Try(v.toInt).toOption).getOrElse(s.partitions),
      last.map(_._1).getOrElse(-1L), last.map(_._2).getOrElse(-1L), s.atMs, s.settings))
  }

  /** This driver wrote `root`'s offset log entry of `batchId` at `atMs`. */
  def offsetsWritten(root: String, batchId: Long, atMs: Long): Unit = offsetsWrittenAt.put(root, (batchId, atMs))

  /**
   * Batch `batchId` of `root` is committing with `state`, as the coordinator knows it: its
   * files are never looked for in the checkpoint (a walk of `state/` is two LISTs and a HEAD
   * per state partition on an object store). Its times are the driver's: `commits/<batchId>`
   * was just written, and `offsets/<batchId>` when [[offsetsWritten]] said so; only an offset
   * entry an earlier run wrote (a batch run again after a restart) is asked of the file system.
   */
  def batchCommitting(root: String, batchId: Long, state: CommittedState): Unit = {
    val packed = state.packed
    firstBatch(root, batchId)
    val atMs = System.currentTimeMillis()
    val offsetsWritten = Option(offsetsWrittenAt.get(root)).collect { case (`batchId`, at) => at }
    val held = heldInlineBytes()
    submit {
      val queryId = queryIdOf(root)
      val version = batchId + 1
      val inline = packed.map(_.files).getOrElse(Nil).filter { case (rel, _) => CheckpointPaths.stateVersionOf(rel).contains(version) }
      val inlineNames = inline.map(_._1).toSet
      val own = state.ownFiles.filterNot { case (rel, _) => inlineNames.contains(rel) }
      val ops = mutable.TreeMap[Int, (Int, Long, Long)]()
      inline.foreach { case (rel, len) => operatorOf(rel).foreach { op =>
        val (n, i, f) = ops.getOrElse(op, (0, 0L, 0L)); ops(op) = (n + 1, i + len, f) } }
      own.foreach { case (rel, len) => operatorOf(rel).foreach { op =>
        val (n, i, f) = ops.getOrElse(op, (0, 0L, 0L)); ops(op) = (n + 1, i, f + len) } }
      // An earlier run's entry has the file system's time (on S3 to the second): never negative.
      val committedAt = atMs
      val offsetsAt = offsetsWritten.orElse {
        val fs = FileSystemOperations.raw(new Path(root).getFileSystem(hadoopConf))
        try Some(fs.getFileStatus(new Path(root, CheckpointPaths.offsetEntry(batchId))).getModificationTime)
        catch { case _: FileNotFoundException => None }
      }
      val packName = packed.map(_.packName).getOrElse("")
      post(CheckpointBatchCommitted(queryId, root, CheckpointBatchRow(batchId, committedAt,
        offsetsAt.map(at => math.max(0L, committedAt - at)).getOrElse(-1L), inline.size + own.size, inline.map(_._2).sum, own.map(_._2).sum,
        packed.map(_.packBytes).getOrElse(0L), packName,
        ops.toSeq.map { case (op, (n, i, f)) => OperatorCommit(op, n, i, f) }), held, maxTotalInlineSize))
    }
  }

  /** A state commit of `root` failed (a refused state file of `batchId`, or its pack). */
  def commitFailed(root: String, batchId: Long, kind: String, message: String): Unit = {
    firstBatch(root, batchId)
    val atMs = System.currentTimeMillis()
    submit(post(CheckpointCommitFailed(queryIdOf(root), root, batchId, atMs, kind, message)))
  }

  /** A savepoint of `root` at `batchId` was written to `path`. */
  def savepointTaken(root: String, queryId: String, batchId: Long, path: String): Unit = {
    val atMs = System.currentTimeMillis()
    submit(post(CheckpointSavepointTaken(queryId, root, batchId, path, atMs)))
  }

  /** Waits until the facts handed over so far are posted (tests). */
  def awaitIdle(timeoutMs: Long): Boolean = {
    val deadline = System.nanoTime() + timeoutMs * 1000000L
    while (executor.getQueue.size + executor.getActiveCount > 0) {
      if (System.nanoTime() > deadline) return false
      Thread.sleep(10)
    }
    true
  }

  def stop(): Unit = executor.shutdownNow()

  private def queryIdOf(root: String): String = {
    val known = queryIds.get(root)
    if (known != null && known.nonEmpty) known else {
      val read = CheckpointPaths.readQueryId(root, hadoopConf)
      queryIds.put(root, read)
      read
    }
  }

  /** The SQL settings batch `batchId`'s offset log entry records. */
  private def recordedConf(root: String, batchId: Long): Option[Map[String, String]] =
    try {
      FileSystemOperations.readSmall(new Path(root, CheckpointPaths.offsetEntry(batchId)), hadoopConf)
        .flatMap(bytes => OffsetLogEntry.conf(new String(bytes, StandardCharsets.UTF_8)))
    } catch { case NonFatal(_) => None }
}

object CheckpointMonitor {
  private val log = LoggerFactory.getLogger(classOf[CheckpointMonitor])

  private final case class Starting(settings: Seq[CheckpointSetting], provider: String, partitions: Int,
      storage: String, atMs: Long)

  def operatorOf(rel: String): Option[Int] = CheckpointPaths.storeOf(rel).map(_._1)

  /** Where each setting of ours came from: the session, Spark's configuration, or the default. */
  def settingsOf(session: Iterable[(String, String)], sparkConf: Map[String, String]): Seq[CheckpointSetting] = {
    val ours = session.filter { case (k, _) => CheckpointStorageSettings.isOurs(k) }.toMap
    val unsetMeans = CheckpointStorageSettings.all.map(s => s.key -> s.unsetMeans).toMap
    val keys = (CheckpointStorageSettings.all.map(_.key) ++ ours.keys.toSeq.sorted).distinct
    keys.map { k =>
      (ours.get(k), sparkConf.get(k)) match {
        case (Some(v), Some(c)) if v == c => CheckpointSetting(k, v, "Spark configuration")
        case (Some(v), _) => CheckpointSetting(k, v, "session")
        case (None, Some(c)) => CheckpointSetting(k, c, "Spark configuration")
        case (None, None) => CheckpointSetting(k, unsetMeans.getOrElse(k, ""), "default")
      }
    }
  }
}
