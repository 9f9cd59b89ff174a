package io.sparkcheckpointstorage.benchmarks

import java.util.{HashMap => JHashMap}

import scala.collection.mutable.ArrayBuffer
import scala.jdk.CollectionConverters._

import org.apache.hadoop.conf.Configuration

import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.checkpointstorage.shim.{StateChange, StateStoreConfShim, StateStoreProviderShim, StateStoreShim}
import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.types.StructType

import io.sparkcheckpointstorage.provider.HeapStateStoreProvider

/**
 * The benchmarks' stateful floor (never shipped: it is in the benchmarks' jar, build.sbt's
 * benchProject): each partition's state in a plain `java.util.HashMap` in
 * the executor, nothing written, nothing read. Spark's stateful machinery around it (the
 * state store RDD, the reports to Spark's state store coordinator, maintenance) runs as for any
 * provider, so a provider's batch time above this one's is what its own state handling costs.
 * That includes the commit report Spark 4.1+ asks of every provider (its built-in ones send
 * it from their commit), a round trip to the driver per store and batch.
 *
 * Correct for Spark's stateful operators within one JVM: a write store applies its changes to
 * the map and keeps their undo; `abort` undoes them, and the undo of the last commit is kept
 * so that a retried task, which asks for the version before it again, gets it back. Any other
 * version (a restart, another executor) is refused: the floor has no checkpoint to read.
 */
class FloorStateStoreProvider extends StateStoreProviderShim {
  private var _id: StateStoreId = _
  private var storeConf: StateStoreConf = _
  private var hadoopConf: Configuration = _
  private val map = new JHashMap[UnsafeRow, UnsafeRow]()
  /** The version the map holds. */
  private var latest = 0L
  /** How to go back from `latest` to `latest - 1`: each changed key and its value before. */
  private var lastUndo: Option[Seq[(UnsafeRow, UnsafeRow)]] = None

  override def stateStoreId: StateStoreId = _id

  /** Spark 4's `init` refuses column families as for our provider: the floor stands in for it. */
  override protected def unsupportedOperation(what: String): UnsupportedOperationException =
    HeapStateStoreProvider.unsupported(what)

  override protected def initialize(stateStoreId: StateStoreId, keySchema: StructType, valueSchema: StructType,
      prefixColumns: Option[Int], storeConfs: StateStoreConf, hadoopConf: Configuration): Unit = {
    if (prefixColumns.isDefined) throw unsupported("prefix-scan keys")
    _id = stateStoreId
    this.storeConf = storeConfs
    this.hadoopConf = hadoopConf
  }

  override protected def openStore(version: Long, forceSnapshotOnCommit: Boolean, loadEmpty: Boolean): StateStore =
    synchronized {
      moveTo(version)
      new FloorStore(version, writable = true)
    }

  override protected def openReadStore(version: Long): ReadStateStore = synchronized {
    moveTo(version)
    new FloorStore(version, writable = false)
  }

  private def moveTo(version: Long): Unit = {
    if (version == latest - 1 && lastUndo.isDefined) {
      undo(lastUndo.get)
      lastUndo = None
      latest = version
    }
    if (version != latest) {
      throw new IllegalStateException(s"$this holds version $latest of its state in heap and " +
        s"nothing on disk: version $version cannot be loaded (the benchmarks' floor provider " +
        "runs one query in one JVM, without restarts)")
    }
  }

  private def undo(changes: Seq[(UnsafeRow, UnsafeRow)]): Unit =
    changes.reverseIterator.foreach { case (k, before) => if (before == null) map.remove(k) else map.put(k, before) }

  private final class FloorStore(override val version: Long, writable: Boolean) extends StateStoreShim {
    private val changes = ArrayBuffer[(UnsafeRow, UnsafeRow)]()
    private var committed = false

    override def id: StateStoreId = _id

    override def getRow(key: UnsafeRow): UnsafeRow = map.get(key)

    override def putRow(key: UnsafeRow, value: UnsafeRow): Unit = {
      checkWritable()
      val k = key.copy()
      changes += k -> map.put(k, value.copy())
    }

    override def removeRow(key: UnsafeRow): Unit = {
      checkWritable()
      val before = map.remove(key)
      if (before != null) changes += key.copy() -> before
    }

    override def rowPairs(): Iterator[UnsafeRowPair] = {
      val pair = new UnsafeRowPair()
      // A copy of the entries: Spark removes keys while it iterates (watermark eviction).
      map.entrySet().asScala.toArray.iterator.map(e => pair.withRows(e.getKey, e.getValue))
    }

    override def prefixRowPairs(prefixKey: UnsafeRow): Iterator[UnsafeRowPair] = throw unsupported("prefix scans")

    override def commit(): Long = FloorStateStoreProvider.this.synchronized {
      checkWritable()
      lastUndo = Some(changes.toList)
      latest = version + 1
      committed = true
      StateStoreConfShim.reportCommit(storeConf, latest, _id, hadoopConf)
      latest
    }

    override def abort(): Unit = FloorStateStoreProvider.this.synchronized {
      if (writable && !committed) {
        undo(changes.toList)
        changes.clear()
      }
    }

    override def releaseStore(): Unit = ()

    override def hasCommitted: Boolean = committed

    override def committedVersion: Long = {
      if (!committed) throw new IllegalStateException(s"$this has not committed")
      version + 1
    }

    override def metrics: StateStoreMetrics = StateStoreMetrics(map.size.toLong, 0L, Map.empty)

    override def unsupportedOperation(what: String): UnsupportedOperationException = unsupported(what)

    override def toString: String = s"FloorStateStore[$id, version=$version]"

    private def checkWritable(): Unit = {
      if (!writable) throw new UnsupportedOperationException(s"$this is read-only")
      if (committed) throw new IllegalStateException(s"$this has committed")
    }
  }

  private def unsupported(what: String) =
    new UnsupportedOperationException(s"FloorStateStoreProvider (the benchmarks' floor) does not support $what")

  /** `init` and `getStore` without the line's signatures, for the suite. */
  /** Without a streaming query: no coordinator to report commits to. */
  private[benchmarks] def initForTest(id: StateStoreId): Unit = {
    _id = id
    val sqlConf = new org.apache.spark.sql.internal.SQLConf()
    sqlConf.setConfString("spark.sql.streaming.stateStore.commitValidation.enabled", "false")
    storeConf = new StateStoreConf(sqlConf)
    hadoopConf = new Configuration()
  }
  private[benchmarks] def getStoreForTest(version: Long): StateStore =
    openStore(version, forceSnapshotOnCommit = false, loadEmpty = false)

  override protected def replay(snapshotVersion: Long, endVersion: Long, readOnly: Boolean): StateStore =
    throw unsupported("reading old versions")
  override protected def changes(startVersion: Long, endVersion: Long): Iterator[StateChange] =
    throw unsupported("change feeds")
  override protected def snapshotMaintenance(): Unit = ()
  override protected def cleanupMaintenance(): Unit = ()
  override def doMaintenance(): Unit = ()
  override def close(): Unit = synchronized { map.clear() }
  override def toString: String = s"FloorStateStoreProvider[$stateStoreId]"
}

object FloorStateStoreProvider {
  val ClassName: String = classOf[FloorStateStoreProvider].getName
}
