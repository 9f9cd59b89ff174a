package io.sparkcheckpointstorage.provider

import java.io.File
import java.net.URI
import java.nio.file.Files

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{Path, RawLocalFileSystem}
import org.scalatest.BeforeAndAfterEach
import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.SparkException
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.checkpointstorage.shim.ProviderTestShim
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
      prefixCols: Option[Int] = None,
      rootDir: String = root.getAbsolutePath,
      hadoopConf: Configuration = new Configuration()): HeapStateStoreProvider = {
    val sqlConf = new SQLConf()
    sqlConf.setConfString(SQLConf.STATE_STORE_MIN_DELTAS_FOR_SNAPSHOT.key, minDeltasForSnapshot.toString)
    sqlConf.setConfString(SQLConf.MIN_BATCHES_TO_RETAIN.key, minVersionsToRetain.toString)
    // No streaming query, so no coordinator to report commits to.
    sqlConf.setConfString("spark.sql.streaming.stateStore.commitValidation.enabled", "false")
    val p = new HeapStateStoreProvider()
    ProviderTestShim.init(p, StateStoreId(rootDir, 0, 0), keySchema, valueSchema, prefixCols,
      new StateStoreConf(sqlConf), hadoopConf)
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
    assert(ProviderTestShim.checkpointInfoVersion(s0).forall(_ == 1))

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

  test("the same batch writes the same delta bytes, whichever store or JVM writes it") {
    // The storages compare a delta's size with their limits: a rerun must not flip the
    // outcome because the records came out in another order.
    val other = Files.createTempDirectory("heap-provider-other").toFile
    try {
      val puts = (1 to 500).map(i => (s"k$i", i % 7) -> i.toLong)
      Seq(root, other).foreach { dir =>
        val p = newProvider(rootDir = dir.getAbsolutePath)
        commitVersion(p, 0, puts)
        p.close()
      }
      val bytes = Seq(root, other).map(d => Files.readAllBytes(new File(d, "0/0/1.heap-delta").toPath))
      assert(bytes(0).length > 1000)
      assert(java.util.Arrays.equals(bytes(0), bytes(1)))
    } finally org.apache.commons.io.FileUtils.deleteQuietly(other)
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

  test("a commit's changes are applied by the next store opened; until then a retry drops them") {
    val p = newProvider(minDeltasForSnapshot = 1)
    commitVersion(p, 0, Seq(("a", 1) -> 1L, ("b", 1) -> 1L))
    val committing = p.getStore(1)
    committing.put(key("a", 1), value(2)); committing.put(key("c", 1), value(3)); committing.remove(key("b", 1))
    assert(committing.commit() == 2)
    // The committed store reads the version it committed (Spark 3.5's complete mode does).
    assert(data(committing) == Map(("a", 1) -> 2L, ("c", 1) -> 3L))
    assert(committing.get(key("b", 1)) == null && valueOf(committing.get(key("c", 1))) == 3L)
    // Version 2's changes are set aside: maintenance snapshots the map, version 1.
    p.doMaintenance()
    val snapshots = () => storeDir.list().filter(_.endsWith(".heap-snapshot")).toSet
    assert(snapshots() == Set("1.heap-snapshot"))
    // A reader of version 1 (a retried task) gets the map as it is.
    assert(data(p.getReadStore(1)) == Map(("a", 1) -> 1L, ("b", 1) -> 1L))
    commitVersion(p, 1, Seq(("a", 1) -> 2L, ("c", 1) -> 3L), removes = Seq(("b", 1)))
    // The next batch's store applies them; maintenance then snapshots version 2.
    val next = p.getStore(2)
    assert(data(next) == Map(("a", 1) -> 2L, ("c", 1) -> 3L))
    next.abort()
    p.doMaintenance()
    assert(snapshots() == Set("1.heap-snapshot", "2.heap-snapshot"))
    p.close()
    assert(data(newProvider().getStore(2)) == Map(("a", 1) -> 2L, ("c", 1) -> 3L))
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

  test("memoryUsedBytes counts the prefix index of session windows too") {
    val entries = (0 until 2000).map(i => (s"s${i % 100}", i) -> i.toLong)
    def used(prefixCols: Option[Int], dir: String): Long = {
      val p = newProvider(prefixCols = prefixCols, rootDir = new File(root, dir).getAbsolutePath)
      commitVersion(p, 0, entries)
      val store = p.getStore(1)
      val bytes = store.metrics.memoryUsedBytes
      store.abort()
      p.close()
      bytes
    }
    val plain = used(None, "plain")
    val index = new PrefixIndex(keySchema, 1)
    entries.foreach { case ((n, i), _) => index.add(key(n, i)) }
    index.compactIfWasteful()
    // The store also holds its own (empty) index of the batch's changed keys.
    assert(used(Some(1), "prefixed") == plain + index.memoryBytes + new PrefixIndex(keySchema, 1).memoryBytes)
  }

  /** Commits version 1 (1000 keys) and closes the provider: the delta file that holds it. */
  private def committedDelta(): File = {
    val p = newProvider()
    commitVersion(p, 0, (0 until 1000).map(i => ("key", i) -> i.toLong))
    p.close()
    new File(storeDir, "1.heap-delta")
  }

  test("a truncated delta fails the load with an error naming the file") {
    val f = committedDelta()
    val bytes = Files.readAllBytes(f.toPath)
    Files.write(f.toPath, bytes.take(bytes.length / 2))
    val e = intercept[CorruptStateFileException](newProvider().getStore(1))
    assert(e.getMessage.contains(f.getAbsolutePath.stripPrefix("/")), e.getMessage)
    assert(e.getMessage.contains("corrupt or truncated"))
  }

  test("a corrupt delta fails the load with an error naming the file") {
    val f = committedDelta()
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

  private def corrupt(f: File): Unit = {
    val bytes = Files.readAllBytes(f.toPath)
    bytes(bytes.length / 2) = (bytes(bytes.length / 2) ^ 0x5a).toByte
    Files.write(f.toPath, bytes)
  }

  /** Versions 1-10, a snapshot every third version (3, 6, 9), every delta kept. */
  private def snapshotted(): Map[(String, Int), Long] = {
    val p = newProvider(minDeltasForSnapshot = 3)
    (0 until 10).foreach { v =>
      commitVersion(p, v, (0 until 50).map(i => ("k", i) -> (v * 100 + i).toLong), removes = Seq(("k", v)))
      p.doMaintenance()
    }
    p.close()
    assert(Seq(3, 6, 9).forall(v => new File(storeDir, s"$v.heap-snapshot").exists()), storeDir.list().toSeq)
    (0 until 50).map(i => ("k", i) -> (900L + i)).toMap - (("k", 9))
  }

  test("a damaged latest snapshot falls back to an older snapshot and its deltas") {
    val expected = snapshotted()
    corrupt(new File(storeDir, "9.heap-snapshot"))
    assert(data(newProvider().getStore(10)) == expected)
    corrupt(new File(storeDir, "6.heap-snapshot"))
    corrupt(new File(storeDir, "3.heap-snapshot"))
    assert(data(newProvider().getStore(10)) == expected, "every snapshot damaged: all the deltas from 1")
  }

  test("a damaged snapshot nothing else can rebuild fails naming it") {
    snapshotted()
    (1 to 8).foreach(v => assert(new File(storeDir, s"$v.heap-delta").delete()))
    corrupt(new File(storeDir, "9.heap-snapshot"))
    val e = intercept[CorruptStateFileException](newProvider().getStore(10))
    assert(e.getMessage.contains("9.heap-snapshot is corrupt or truncated"), e.getMessage)
  }

  /** Spark's error class for a missing state file, naming it, then what is missing. */
  private def assertMissingFile(e: SparkException, file: String): Unit = {
    ProviderTestShim.assertCondition(e, "CANNOT_LOAD_STATE_STORE.CANNOT_READ_STREAMING_STATE_FILE",
      "fileToRead" -> (_.endsWith(file)))
    assert(e.getMessage.contains(new File(storeDir, file).getAbsolutePath + " does not exist"), e.getMessage)
    assert(e.getMessage.contains(s"$file is missing and no snapshot"), e.getMessage)
  }

  test("a missing delta fails the load naming the missing file") {
    val p = newProvider()
    (0 until 3).foreach(v => commitVersion(p, v, Seq(("k", v) -> 1L)))
    p.close()
    assert(new File(storeDir, "2.heap-delta").delete())
    assertMissingFile(intercept[SparkException](newProvider().getStore(3)), "2.heap-delta")
    assertMissingFile(intercept[SparkException](newProvider().getReadStore(3)), "2.heap-delta")
  }

  test("a negative version is Spark's UNEXPECTED_VERSION error") {
    val p = newProvider()
    for (get <- Seq[Long => Any](p.getStore(_), p.getReadStore(_))) {
      val e = intercept[Exception](get(-1))
      assert(e.getMessage.contains("Version cannot be -1 because it is less than 0"), e.getMessage)
      ProviderTestShim.assertCondition(e, "CANNOT_LOAD_STATE_STORE.UNEXPECTED_VERSION", "version" -> (_ == "-1"))
    }
    p.close()
  }

  test("a failed commit is Spark's CANNOT_COMMIT error naming the store, caused by the failure") {
    // Spark's SPARK-18342 test, but for the store's name: renames fail, so does the commit.
    val conf = new Configuration()
    conf.set(s"fs.${RenameFailsFileSystem.Scheme}.impl", classOf[RenameFailsFileSystem].getName)
    conf.setBoolean(s"fs.${RenameFailsFileSystem.Scheme}.impl.disable.cache", true)
    val p = newProvider(rootDir = s"${RenameFailsFileSystem.Scheme}://${root.getAbsolutePath}", hadoopConf = conf)
    val s = p.getStore(0)
    s.put(key("a", 0), value(0))
    val e = intercept[SparkException](s.commit())
    ProviderTestShim.assertCondition(e, "CANNOT_WRITE_STATE_STORE.CANNOT_COMMIT")
    assert(e.getMessage.contains("Error writing state store files"), e.getMessage)
    assert(e.getMessage.contains("HeapStateStore"), e.getMessage)
    assert(e.getMessage.contains("operatorId=0") && e.getMessage.contains("partitionId=0"), e.getMessage)
    assert(e.getCause.getMessage.contains("Failed to rename"), e.getCause.getMessage)
    // What failed is in the message itself, on the line after Spark's: a failed query shows
    // this message, not its causes.
    assert(e.getMessage.linesIterator.toSeq(1).contains("Failed to rename"), e.getMessage)
    assert(!s.hasCommitted)
    s.abort()
    p.close()
  }

  /** A value row of 120 bytes (a plain one is 16): it cannot be overwritten in place. */
  private def paddedValue(v: Long): UnsafeRow = {
    val row = new UnsafeRow(1)
    row.pointTo(new Array[Byte](120), 120)
    row.setLong(0, v)
    row
  }

  test("iterators are live views: later changes show, no key is returned twice or skipped") {
    val p = newProvider()
    commitVersion(p, 0, (0 until 50).map(i => ("base", i) -> i.toLong))
    val s = p.getStore(1)
    (0 until 50).foreach(i => s.put(key("new", i), value(i)))
    val it = s.iterator()
    (0 until 50).foreach(i => s.put(key("late", i), value(i)))   // added after creation
    s.remove(key("base", 0))                                      // removed before reached
    s.remove(key("new", 0))
    // While iterating: grow every value (a value of another length moves its record) and
    // remove every tenth key, as FlatMapGroupsWithState timeouts and watermark eviction do.
    val seen = scala.collection.mutable.ArrayBuffer[((String, Int), Long)]()
    it.foreach { pair =>
      val k = keyOf(pair.key)
      seen += k -> valueOf(pair.value)
      val row = pair.key.copy()
      if (k._2 % 10 == 5) s.remove(row) else s.put(row, paddedValue(1000L + k._2))
    }
    val expectedKeys = (for (n <- Seq("base", "new", "late"); i <- 0 until 50 if i != 0 || n == "late")
      yield (n, i)).toSet
    assert(seen.map(_._1).toSet == expectedKeys)
    assert(seen.size == expectedKeys.size, "a key was returned twice")
    assert(seen.toMap == expectedKeys.map(k => k -> k._2.toLong).toMap)
    val after = data(s)
    assert(after.keySet == expectedKeys.filter(_._2 % 10 != 5))
    assert(after.values.forall(_ >= 1000L))
    s.commit()
    assert(data(p.getStore(2)) == after)
    p.close()
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
    assertMissingFile(intercept[SparkException](newProvider().getStore(5)), "2.heap-delta")
  }
}

/** A local file system whose renames fail, as Spark's SPARK-18342 test uses. */
class RenameFailsFileSystem extends RawLocalFileSystem {
  override def getUri: URI = URI.create(s"${RenameFailsFileSystem.Scheme}:///")
  override def rename(src: Path, dst: Path): Boolean = false
}

object RenameFailsFileSystem {
  val Scheme = "heaprenamefails"
}
