// Spark 4.x: grouped deletes need Hadoop's bulk delete (3.4.1+); on 3.5 each is its own request.
package io.sparkcheckpointstorage.filemanager

import java.io.{File, FileNotFoundException}
import java.nio.charset.StandardCharsets
import java.nio.file.Files

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.scalatest.BeforeAndAfterEach
import org.scalatest.funsuite.AnyFunSuite

import io.sparkcheckpointstorage.coordinator.{CheckpointCoordinator, DriverRuntime}
import io.sparkcheckpointstorage.faults.BulkDeletingFileSystem

/**
 * Spark purges one entry of its offset and commit logs a batch: on a file system whose bulk
 * delete removes many files in one request (S3A), the file manager deletes them ten at a time,
 * and they are gone for it from the purge on.
 */
class PurgedLogEntriesSuite extends AnyFunSuite with BeforeAndAfterEach {
  private var dir: File = _

  override def beforeEach(): Unit = {
    dir = Files.createTempDirectory("scs-purge").toFile
    new File(dir, "offsets").mkdirs()
    BulkDeletingFileSystem.synchronized {
      BulkDeletingFileSystem.requests.clear()
      BulkDeletingFileSystem.failOnce.clear()
    }
  }

  override def afterEach(): Unit = org.apache.commons.io.FileUtils.deleteQuietly(dir)

  private def conf: Configuration = {
    val c = new Configuration()
    c.set("fs.faulty.impl", classOf[BulkDeletingFileSystem].getName)
    c.set("fs.faulty.impl.disable.cache", "true")
    c.set("fs.AbstractFileSystem.faulty.impl", "io.sparkcheckpointstorage.faults.FaultInjectingFs")
    c
  }

  private def log = new Path(s"faulty://${dir.getAbsolutePath}/offsets")
  private def entry(b: Int) = new Path(log, b.toString)
  private def onDisk(b: Int) = new File(dir, s"offsets/$b").exists()
  private def requests = BulkDeletingFileSystem.synchronized(BulkDeletingFileSystem.requests.toList)
  private def listed(m: StorageCheckpointFileManager) =
    m.list(log, (p: Path) => p.getName.forall(_.isDigit)).map(_.getPath.getName.toInt).sorted.toSeq

  private def write(m: StorageCheckpointFileManager, b: Int): Unit = {
    val out = m.createAtomic(entry(b), false)
    out.write(s"v1\n$b".getBytes(StandardCharsets.UTF_8))
    out.close()
  }

  test("purged log entries are deleted ten to a request, gone for the file manager from the purge on") {
    val m = new StorageCheckpointFileManager(log, conf)
    (0 to 29).foreach(write(m, _))
    assert(listed(m) == (0 to 29))

    (0 to 8).foreach(b => m.delete(entry(b)))
    assert(requests.isEmpty, "nothing deleted before the group is full")
    assert((0 to 8).forall(onDisk))
    assert((0 to 8).forall(b => !m.exists(entry(b))) && m.exists(entry(9)))
    assert(listed(m) == (9 to 29))
    intercept[FileNotFoundException](m.open(entry(3)))

    m.delete(entry(9))
    assert(requests == Seq((0 to 9).map(_.toString)), "one request for the ten")
    assert((0 to 9).forall(b => !onDisk(b)) && onDisk(10))

    // A file the store could not delete stays purged here and goes with the next group.
    BulkDeletingFileSystem.synchronized(BulkDeletingFileSystem.failOnce += "15")
    (10 to 19).foreach(b => m.delete(entry(b)))
    assert(requests.size == 2 && requests(1) == (10 to 19).map(_.toString))
    assert(onDisk(15) && !m.exists(entry(15)) && !listed(m).contains(15))
    assert((10 to 19).filter(_ != 15).forall(b => !onDisk(b)))
    (20 to 28).foreach(b => m.delete(entry(b)))
    assert(requests.size == 3 && requests(2).toSet == ("15" +: (20 to 28).map(_.toString)).toSet)
    assert(!onDisk(15) && (20 to 28).forall(b => !onDisk(b)))

    // A purged entry written again (a rewind): the old one is deleted first, the new one kept.
    m.delete(entry(29))
    assert(requests.size == 3 && onDisk(29) && !m.exists(entry(29)))
    write(m, 29)
    assert(requests.size == 4 && requests(3) == Seq("29"))
    assert(m.exists(entry(29)) && listed(m) == Seq(29))
    val in = m.open(entry(29))
    try assert(new String(org.apache.commons.io.IOUtils.toByteArray(in), StandardCharsets.UTF_8) == "v1\n29")
    finally in.close()
  }

  test("the purged entries a stopped query left are deleted when it stops") {
    Files.write(new File(dir, "metadata").toPath, """{"id":"q-1"}""".getBytes(StandardCharsets.UTF_8))
    val coordinator = new CheckpointCoordinator(conf, Long.MaxValue)
    DriverRuntime.useForTests(Some(coordinator))
    try {
      val root = log.getParent.toString
      val m = new StorageCheckpointFileManager(log, conf)
      (0 to 4).foreach(write(m, _))
      (0 to 2).foreach(b => m.delete(entry(b)))
      assert(requests.isEmpty && (0 to 2).forall(onDisk))
      // The query committed in this driver, then stopped.
      coordinator.batchCommitted(root, 4, coordinator.beforeCommit(root, 4))
      assert(coordinator.queryTerminated("q-1") == Seq(root))
      assert(requests == Seq(Seq("0", "1", "2")))
      assert((0 to 2).forall(b => !onDisk(b)) && onDisk(3) && onDisk(4))
    } finally DriverRuntime.useForTests(None)
  }

  test("without a bulk delete of many files a request, each purged entry is deleted at once") {
    val c = conf
    c.set("fs.faulty.impl", "io.sparkcheckpointstorage.faults.FaultInjectingFileSystem")
    val m = new StorageCheckpointFileManager(log, c)
    (0 to 2).foreach(write(m, _))
    m.delete(entry(0))
    assert(!onDisk(0) && onDisk(1) && !m.exists(entry(0)) && listed(m) == Seq(1, 2))
  }
}
