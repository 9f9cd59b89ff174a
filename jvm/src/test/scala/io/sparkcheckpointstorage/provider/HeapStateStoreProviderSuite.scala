package io.sparkcheckpointstorage.provider

import java.io.File
import java.nio.file.Files

import org.apache.hadoop.conf.Configuration
import org.scalatest.BeforeAndAfterEach
import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.internal.SQLConf

import io.sparkcheckpointstorage.provider.StateRows._

class HeapStateStoreProviderSuite extends AnyFunSuite with BeforeAndAfterEach {
  private var root: File = _

  override def beforeEach(): Unit = { root = Files.createTempDirectory("heap-provider").toFile }
  override def afterEach(): Unit = org.apache.commons.io.FileUtils.deleteQuietly(root)

  private def storeDir: File = new File(root, "0/0")

  private def newProvider(
      minDeltasForSnapshot: Int = 10,
      minVersionsToRetain: Int = 100,
      prefixCols: Option[Int] = None): HeapStateStoreProvider = {
    val sqlConf = new SQLConf()
    sqlConf.setConfString(SQLConf.STATE_STORE_MIN_DELTAS_FOR_SNAPSHOT.key, minDeltasForSnapshot.toString)
    sqlConf.setConfString(SQLConf.MIN_BATCHES_TO_RETAIN.key, minVersionsToRetain.toString)
    // No streaming query, so no coordinator to report commits to.
    sqlConf.setConfString("spark.sql.streaming.stateStore.commitValidation.enabled", "false")
    val spec = prefixCols match {
      case Some(n) => PrefixKeyScanStateEncoderSpec(keySchema, n)
      case None => NoPrefixKeyStateEncoderSpec(keySchema)
    }
    val p = new HeapStateStoreProvider()
    p.init(StateStoreId(root.getAbsolutePath, 0, 0), keySchema, valueSchema, spec,
      useColumnFamilies = false, new StateStoreConf(sqlConf), new Configuration(),
      useMultipleValuesPerKey = false, stateSchemaProvider = None)
    p
  }

  private def data(store: ReadStateStore): Map[(String, Int), Long] =
    store.iterator().map(p => keyOf(p.key) -> valueOf(p.value)).toMap

  private def commitVersion(p: StateStoreProvider, version: Long,
      puts: Seq[((String, Int), Long)], removes: Seq[(String, Int)] = Nil): Long = {
    val s = p.getStore(version)
    puts.foreach { case ((n, i), v) => s.put(key(n, i), value(v)) }
    removes.foreach { case (n, i) => s.remove(key(n, i)) }
    s.commit()
  }

  test("commits make versions; reads see the batch's own changes; abort drops them") {
    val p = newProvider()
    val s0 = p.getStore(0)
    s0.put(key("a", 1), value(1))
    s0.put(key("b", 2), value(2))
    assert(valueOf(s0.get(key("a", 1))) == 1)
    assert(s0.metrics.numKeys == 2)
    assert(s0.commit() == 1)
    assert(s0.hasCommitted)
    assert(s0.getStateStoreCheckpointInfo().batchVersion == 1)

    val s1 = p.getStore(1)
    s1.put(key("a", 1), value(10))
    s1.remove(key("b", 2))
    assert(data(s1) == Map(("a", 1) -> 10L))
    s1.abort()

    val again = p.getStore(1)
    assert(data(again) == Map(("a", 1) -> 1L, ("b", 2) -> 2L))
    intercept[IllegalStateException](s1.put(key("x", 0), value(0)))
    again.abort()
    p.close()
  }

  test("a new provider restores every retained version from the files") {
    val p = newProvider()
    commitVersion(p, 0, Seq(("a", 1) -> 1L, ("b", 1) -> 2L))
    commitVersion(p, 1, Seq(("a", 1) -> 5L), removes = Seq(("b", 1)))
    commitVersion(p, 2, Seq(("c", 1) -> 7L))
    p.close()

    val q = newProvider()
    assert(data(q.getStore(3)) == Map(("a", 1) -> 5L, ("c", 1) -> 7L))
    assert(data(q.getReadStore(1)) == Map(("a", 1) -> 1L, ("b", 1) -> 2L))
    assert(data(q.getReadStore(2)) == Map(("a", 1) -> 5L))
    assert(data(q.getStore(0)) == Map.empty)
  }

  test("a retried task re-commits the previous version; the result is as if once") {
    val p = newProvider()
    commitVersion(p, 0, Seq(("a", 1) -> 1L))
    commitVersion(p, 1, Seq(("a", 1) -> 2L, ("b", 1) -> 3L))
    // The retry of batch 1 asks for version 1 again, after version 2 is in memory.
    val retry = p.getStore(1)
    assert(data(retry) == Map(("a", 1) -> 1L))
    retry.put(key("a", 1), value(2))
    retry.put(key("b", 1), value(3))
    assert(retry.commit() == 2)
    assert(data(p.getStore(2)) == Map(("a", 1) -> 2L, ("b", 1) -> 3L))
    // A second attempt that commits the same version from a stale store also lands once.
    val first = p.getStore(2)
    val second = p.getStore(2)
    first.put(key("c", 1), value(4)); first.commit()
    second.put(key("c", 1), value(4)); second.commit()
    assert(data(p.getStore(3)) == Map(("a", 1) -> 2L, ("b", 1) -> 3L, ("c", 1) -> 4L))
    p.close()
    assert(data(newProvider().getStore(3)) == Map(("a", 1) -> 2L, ("b", 1) -> 3L, ("c", 1) -> 4L))
  }

  test("maintenance snapshots off the commit path and deletes files beyond retention") {
    val p = newProvider(minDeltasForSnapshot = 3, minVersionsToRetain = 2)
    (0 until 10).foreach { v => commitVersion(p, v, Seq(("k", v) -> v.toLong)); p.doMaintenance() }
    val names = storeDir.list().filterNot(_.startsWith(".")).toSet
    assert(names.exists(_.endsWith(".heap-snapshot")), names)
    assert(!names.contains("1.heap-delta"), names)
    assert(names.contains("10.heap-delta"), names)
    p.close()
    val q = newProvider()
    assert(data(q.getStore(10)) == (0 until 10).map(v => ("k", v) -> v.toLong).toMap)
    assert(data(q.getReadStore(8)) == (0 until 8).map(v => ("k", v) -> v.toLong).toMap)
  }

  test("prefix scan sees committed and pending keys of one prefix only") {
    val p = newProvider(prefixCols = Some(1))
    commitVersion(p, 0, Seq(("a", 1) -> 1L, ("a", 2) -> 2L, ("b", 1) -> 3L))
    val s = p.getStore(1)
    s.put(key("a", 3), value(4))
    s.remove(key("a", 1))
    def scan(n: String) = s.prefixScan(prefix(n)).map(p => keyOf(p.key) -> valueOf(p.value)).toMap
    assert(scan("a") == Map(("a", 2) -> 2L, ("a", 3) -> 4L))
    assert(scan("b") == Map(("b", 1) -> 3L))
    assert(scan("c") == Map.empty)
    s.commit()
    p.close()
    val q = newProvider(prefixCols = Some(1)).getStore(2)
    assert(q.prefixScan(prefix("a")).map(p => keyOf(p.key)).toSet == Set(("a", 2), ("a", 3)))
  }

  test("a truncated delta fails the load with an error naming the file") {
    val p = newProvider()
    commitVersion(p, 0, (0 until 1000).map(i => ("key", i) -> i.toLong))
    p.close()
    val f = new File(storeDir, "1.heap-delta")
    val bytes = Files.readAllBytes(f.toPath)
    Files.write(f.toPath, bytes.take(bytes.length / 2))
    val e = intercept[CorruptStateFileException](newProvider().getStore(1))
    assert(e.getMessage.contains(f.getAbsolutePath.stripPrefix("/")), e.getMessage)
    assert(e.getMessage.contains("corrupt or truncated"))
  }

  test("a corrupt delta fails the load with an error naming the file") {
    val p = newProvider()
    commitVersion(p, 0, (0 until 1000).map(i => ("key", i) -> i.toLong))
    p.close()
    val f = new File(storeDir, "1.heap-delta")
    val bytes = Files.readAllBytes(f.toPath)
    // One flipped byte anywhere after the header: in the records, the trailer or the
    // codec's end mark.
    for (at <- Seq(bytes.length / 2, bytes.length - 30, bytes.length - 5)) {
      val copy = bytes.clone()
      copy(at) = (copy(at) ^ 0x5a).toByte
      Files.write(f.toPath, copy)
      val e = intercept[CorruptStateFileException](newProvider().getStore(1))
      assert(e.getMessage.contains("1.heap-delta"), s"byte $at: ${e.getMessage}")
    }
  }

  test("a missing delta fails the load naming the missing file") {
    val p = newProvider()
    (0 until 3).foreach(v => commitVersion(p, v, Seq(("k", v) -> 1L)))
    p.close()
    assert(new File(storeDir, "2.heap-delta").delete())
    val e = intercept[IllegalStateException](newProvider().getStore(3))
    assert(e.getMessage.contains("2.heap-delta is missing"), e.getMessage)
  }

  test("state written by Spark's default provider is refused with the provider's name") {
    storeDir.mkdirs()
    Files.write(new File(storeDir, "1.delta").toPath, Array[Byte](1, 2, 3))
    val e = intercept[IllegalStateException](newProvider().getStore(1))
    assert(e.getMessage.contains("HDFSBackedStateStoreProvider"), e.getMessage)
    assert(e.getMessage.contains("spark.sql.streaming.stateStore.providerClass"))
  }

  test("a version never written is an error, never empty state") {
    val p = newProvider()
    commitVersion(p, 0, Seq(("a", 1) -> 1L))
    p.close()
    val e = intercept[IllegalStateException](newProvider().getStore(5))
    assert(e.getMessage.contains("2.heap-delta is missing"), e.getMessage)
  }

  test("unsupported features name the provider to use instead") {
    val p = new HeapStateStoreProvider()
    val e = intercept[UnsupportedOperationException] {
      p.init(StateStoreId(root.getAbsolutePath, 0, 0), keySchema, valueSchema,
        NoPrefixKeyStateEncoderSpec(keySchema), useColumnFamilies = true, new StateStoreConf(),
        new Configuration(), useMultipleValuesPerKey = false, stateSchemaProvider = None)
    }
    assert(e.getMessage.contains("column families"))
    assert(e.getMessage.contains("RocksDBStateStoreProvider"))
  }
}
