package io.sparkcheckpointstorage.reader

import java.nio.charset.StandardCharsets.{ISO_8859_1, UTF_8}
import java.nio.file.{Files, Path => NioPath}

import org.apache.commons.io.FileUtils
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.ChecksumFileSystem
import org.scalatest.funsuite.AnyFunSuite

import io.sparkcheckpointstorage.layout.StorageMarker
import io.sparkcheckpointstorage.packs.{CorruptPackException, PackDirectory, PackIndex}

class CheckpointReaderSuite extends AnyFunSuite {
  private val conf = new Configuration()

  private def withDir(body: NioPath => Unit): Unit = {
    val dir = Files.createTempDirectory("scs-reader")
    try body(dir) finally FileUtils.deleteDirectory(dir.toFile)
  }

  private def write(root: NioPath, rel: String, content: String): Unit = {
    val p = root.resolve(rel)
    Files.createDirectories(p.getParent)
    Files.write(p, content.getBytes(UTF_8))
  }

  private def pack(root: NioPath, seq: Long, files: Seq[(String, String)], deleted: Seq[String] = Nil): PackIndex =
    PackDirectory.write(root.toString, seq, seq - 1, "q-1", files.map { case (r, s) => r -> s.getBytes(UTF_8) },
      deleted, conf)._2

  private def marker(root: NioPath, persistent: Boolean): Unit =
    StorageMarker.write(root.toString, StorageMarker("FileSystemCheckpointStorage", persistent, keepInHeap = false), conf)

  /**
   * Batches 0-1 committed, 2 planned; store files of versions 1 (a file), 2 and 3 (inline),
   * partition 1's only in packs; pack 2 deletes partition 1's version 1.
   */
  private def checkpoint(root: NioPath): (PackIndex, PackIndex) = {
    write(root, "metadata", """{"id":"q-1"}""")
    (0 to 2).foreach(b => write(root, s"offsets/$b", s"offsets $b"))
    (0 to 1).foreach(b => write(root, s"commits/$b", s"commit $b"))
    write(root, "state/0/0/1.heap-delta", "v1 file")
    // An atomic write in progress: not a file of the checkpoint.
    write(root, "state/0/0/.4.heap-delta.0b1c2d3e.tmp", "partial")
    marker(root, persistent = true)
    val first = pack(root, 1, Seq("state/0/0/2.heap-delta" -> "v2 inline", "state/0/1/1.heap-delta" -> "p1 v1"))
    val second = pack(root, 2, Seq("state/0/0/3.heap-delta" -> "v3 inline!", "state/0/1/2.heap-delta" -> "p1 v2"),
      deleted = Seq("state/0/1/1.heap-delta"))
    (first, second)
  }

  private def text(bytes: Option[Array[Byte]]): Option[String] = bytes.map(new String(_, UTF_8))

  test("the checkpoint is named by its qualified location and read through the raw file system") {
    withDir { dir =>
      val reader = new CheckpointReader(dir.toString, conf)
      assert(reader.root == s"file:$dir")
      assert(new CheckpointReader(reader.root, conf).root == reader.root)
      // Byte-exact reads of files written without Hadoop's checksum sidecars.
      assert(!reader.fs.isInstanceOf[ChecksumFileSystem])
      assert(reader.exists)
      assert(!new CheckpointReader(dir.resolve("missing").toString, conf).exists)
    }
  }

  test("entries: real files and the packs' live inline files, sorted, each inline one with its pack; no temp files") {
    withDir { root =>
      checkpoint(root)
      val entries = new CheckpointReader(root.toString, conf).entries()
      assert(entries.map(e => (e.relPath, e.length, e.inline, e.pack)) == Seq(
        ("checkpoint-storage", Files.size(root.resolve("checkpoint-storage")), false, None),
        ("commits/0", 8L, false, None),
        ("commits/1", 8L, false, None),
        ("metadata", 12L, false, None),
        ("offsets/0", 9L, false, None),
        ("offsets/1", 9L, false, None),
        ("offsets/2", 9L, false, None),
        ("state-packs/1.pack", Files.size(root.resolve("state-packs/1.pack")), false, None),
        ("state-packs/2.pack", Files.size(root.resolve("state-packs/2.pack")), false, None),
        ("state/0/0/1.heap-delta", 7L, false, None),
        ("state/0/0/2.heap-delta", 9L, true, Some("1.pack")),
        ("state/0/0/3.heap-delta", 10L, true, Some("2.pack")),
        ("state/0/1/2.heap-delta", 5L, true, Some("2.pack"))))
      assert(entries.filter(_.inline).forall(_.modificationTime == 0L))
      assert(entries.filterNot(_.inline).forall(_.modificationTime > 0L))
    }
  }

  test("read gives an inline file's bytes from its pack and a real file's from disk; a file gone is None") {
    withDir { root =>
      checkpoint(root)
      val reader = new CheckpointReader(root.toString, conf)
      val byPath = reader.entries().map(e => e.relPath -> e).toMap
      assert(text(reader.read(byPath("state/0/0/1.heap-delta"))).contains("v1 file"))
      assert(text(reader.read(byPath("state/0/0/2.heap-delta"))).contains("v2 inline"))
      assert(text(reader.read(byPath("state/0/1/2.heap-delta"))).contains("p1 v2"))
      Files.delete(root.resolve("state/0/0/1.heap-delta"))
      assert(reader.read(byPath("state/0/0/1.heap-delta")).isEmpty)
      // A file deleted by a later pack is not inline any more: only a real file could give it.
      assert(reader.read(CheckpointEntry("state/0/1/1.heap-delta", 5, inline = true, Some("1.pack"), 0L)).isEmpty)
    }
  }

  test("an inline file shadows a real file of the same path") {
    withDir { root =>
      checkpoint(root)
      write(root, "state/0/0/2.heap-delta", "stale real file")
      val reader = new CheckpointReader(root.toString, conf)
      val entry = reader.entries().find(_.relPath == "state/0/0/2.heap-delta").get
      assert(entry.inline && entry.pack.contains("1.pack") && entry.length == 9L)
      assert(text(reader.read(entry)).contains("v2 inline"))
    }
  }

  test("an inline file whose pack bytes were damaged is refused, not returned") {
    withDir { root =>
      checkpoint(root)
      val reader = new CheckpointReader(root.toString, conf)
      val entry = reader.entries().find(_.relPath == "state/0/0/3.heap-delta").get
      val packFile = root.resolve("state-packs/2.pack")
      val bytes = Files.readAllBytes(packFile)
      val at = new String(bytes, ISO_8859_1).indexOf("v3 inline!")
      bytes(at) = 'V'.toByte
      Files.write(packFile, bytes)
      val e = intercept[CorruptPackException](reader.read(entry))
      assert(e.getMessage.contains("state/0/0/3.heap-delta do not match their checksum"))
    }
  }

  test("without a storage marker the checkpoint has no inline state, packs or not") {
    withDir { root =>
      checkpoint(root)
      Files.delete(root.resolve("checkpoint-storage"))
      val entries = new CheckpointReader(root.toString, conf).entries()
      assert(entries.filter(_.relPath.startsWith("state/")).map(_.relPath) == Seq("state/0/0/1.heap-delta"))
      assert(entries.forall(!_.inline))
    }
  }

  test("a checkpoint whose state lived in a previous driver's heap only is unreadable, saying the state is gone") {
    withDir { root =>
      checkpoint(root)
      marker(root, persistent = false)
      val reader = new CheckpointReader(root.toString, conf)
      val e = intercept[CheckpointUnreadableException](reader.entries())
      assert(e.getMessage.contains(s"checkpoint ${reader.root} was kept in the heap of the driver only"))
      assert(e.getMessage.contains("is gone"))
    }
  }

  test("packs: each pack's name and index, oldest first, marker or not") {
    withDir { root =>
      assert(new CheckpointReader(root.toString, conf).packs().isEmpty)
      val (first, second) = checkpoint(root)
      Files.delete(root.resolve("checkpoint-storage"))
      assert(new CheckpointReader(root.toString, conf).packs() == Seq("1.pack" -> first, "2.pack" -> second))
    }
  }

  test("batch ids of a log folder: its entries' numbers in order, other names and a missing folder ignored") {
    withDir { root =>
      checkpoint(root)
      write(root, "commits/10", "commit 10")
      write(root, "commits/.10.crc", "sidecar")
      write(root, "commits/.11.0b1c.tmp", "partial")
      val reader = new CheckpointReader(root.toString, conf)
      assert(reader.batchIds("commits") == Seq(0L, 1L, 10L))
      assert(reader.batchIds("offsets") == Seq(0L, 1L, 2L))
      assert(reader.batchIds("nowhere").isEmpty)
    }
  }

  test("committed batch: the last one or one named; in flight, unknown, or nothing committed yet") {
    withDir { root =>
      val empty = new CheckpointReader(root.toString, conf)
      assert(empty.committedBatch(-1) == Left(NoCommittedBatch.NothingCommitted))
      assert(NoCommittedBatch.NothingCommitted.message(empty.root, "save", "saved") ==
        s"The checkpoint ${empty.root} has no committed batch yet: there is no state to save. Let the " +
          "query complete a batch first (query.processAllAvailable()).")
      checkpoint(root)
      val reader = new CheckpointReader(root.toString, conf)
      assert(reader.committedBatch(-1) == Right(CommittedBatch(1, Seq(0L, 1L))))
      assert(reader.committedBatch(0) == Right(CommittedBatch(0, Seq(0L))))
      assert(reader.committedBatch(2) == Left(NoCommittedBatch.InFlight(2, 1)))
      assert(reader.committedBatch(9) == Left(NoCommittedBatch.Unknown(9, 0, 1)))
      assert(NoCommittedBatch.Unknown(9, 0, 1).message("/cp", "migrate", "migrated") ==
        "The checkpoint /cp has no committed batch 9 (committed: 0 to 1).")
    }
  }
}
