package io.sparkcheckpointstorage.packs

import java.io.FileNotFoundException
import java.nio.ByteBuffer
import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{Files, Path => NioPath}

import org.apache.commons.io.FileUtils
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileAlreadyExistsException, Path}
import org.scalatest.funsuite.AnyFunSuite

import io.sparkcheckpointstorage.fileio.FileSystemOperations

class PacksSuite extends AnyFunSuite {
  private val conf = new Configuration()

  private def withCheckpoint(body: String => Unit): Unit = {
    val dir = Files.createTempDirectory("scs-packs")
    try body(dir.toString) finally FileUtils.deleteDirectory(dir.toFile)
  }

  private def bytes(s: String): Array[Byte] = s.getBytes(UTF_8)

  private def write(root: String, seq: Long, files: Seq[(String, String)] = Nil, deleted: Seq[String] = Nil,
      batchId: Long = 0L, queryId: String = "q-1"): (Path, PackIndex, Long) =
    PackDirectory.write(root, seq, batchId, queryId, files.map { case (rel, s) => rel -> bytes(s) }, deleted, conf)

  private def local(p: Path): NioPath = FileSystemOperations.localPath(p)

  private def rewrite(p: Path)(change: Array[Byte] => Array[Byte]): Unit =
    Files.write(local(p), change(Files.readAllBytes(local(p))))

  private def names(root: String): Set[String] = FileSystemOperations.listNames(PackDirectory.dir(root), conf).toSet

  test("a pack written to a checkpoint reads back the same files, bytes, deletions, batch and query") {
    withCheckpoint { root =>
      val files = Seq("state/0/0/2.heap-delta" -> "two", "state/0/1/2.heap-delta" -> "", "state/1/0/left/2.delta" -> "x" * 1000)
      val (path, index, length) = write(root, 1, files, deleted = Seq("state/0/0/1.heap-delta"), batchId = 7)
      assert(path == PackDirectory.path(root, 1))
      assert(length == Files.size(local(path)))
      assert(index == PackIndex(7, "q-1", index.entries, Seq("state/0/0/1.heap-delta")))
      assert(PackDirectory.readIndex(path, conf) == Some(index))
      assert(index.entries.map(_.relPath) == files.map(_._1))
      index.entries.zip(files).foreach { case (e, (rel, content)) =>
        assert(new String(PackDirectory.readEntry(path.toString, e.offset, e.length, e.crc, rel, conf), UTF_8) == content)
      }
      // Nothing but the pack: the atomic write left no temporary file beside it.
      assert(names(root) == Set("1.pack"))
    }
  }

  test("a pack's file name carries its sequence number, not the batch it was written in") {
    withCheckpoint { root =>
      val (path, index, _) = write(root, 3, batchId = 41)
      assert(path.getName == "3.pack")
      assert(PackDirectory.sequences(root, conf) == Seq(3L))
      assert(index.batchId == 41L)
      assert(StatePack.fileName(12) == "12.pack")
      assert(StatePack.sequenceOf("12.pack") == Some(12L))
      Seq("12", "x.pack", "-1.pack", "12.PACK", "12.pack.crc", ".12.pack.crc", ".12.pack.0b1c.tmp").foreach { n =>
        assert(StatePack.sequenceOf(n).isEmpty, n)
      }
      assert(StatePack.leftoverSeq(".12.pack.0b1c2d3e.tmp") == Some(12L))
      Seq("12.pack", ".12.pack.crc", ".x.pack.0b1c.tmp").foreach(n => assert(StatePack.leftoverSeq(n).isEmpty, n))
    }
  }

  test("the packs of a checkpoint are listed by number, not by name, and only packs are listed") {
    withCheckpoint { root =>
      assert(PackDirectory.sequences(root, conf).isEmpty)
      Seq(10L, 2L, 9L).foreach(write(root, _))
      Files.write(local(new Path(PackDirectory.dir(root), ".11.pack.0b1c2d3e.tmp")), bytes("leftover"))
      Files.write(local(new Path(PackDirectory.dir(root), "notes.txt")), bytes("other"))
      assert(PackDirectory.sequences(root, conf) == Seq(2L, 9L, 10L))
    }
  }

  test("a second writer of the same pack number fails and leaves the first pack intact") {
    withCheckpoint { root =>
      val (path, first, _) = write(root, 1, Seq("state/0/0/1.heap-delta" -> "first"))
      intercept[FileAlreadyExistsException](write(root, 1, Seq("state/0/0/1.heap-delta" -> "second")))
      assert(PackDirectory.readIndex(path, conf) == Some(first))
      assert(names(root) == Set("1.pack"))
    }
  }

  test("a missing pack has no index; a truncated, foreign or damaged one is refused, naming the file") {
    withCheckpoint { root =>
      val (path, index, _) = write(root, 1, Seq("state/0/0/1.heap-delta" -> "one"))
      val good = Files.readAllBytes(local(path))
      assert(PackDirectory.readIndex(PackDirectory.path(root, 2), conf).isEmpty)
      def refusal(damaged: Array[Byte]): CorruptPackException = {
        Files.write(local(path), damaged)
        val e = intercept[CorruptPackException](PackDirectory.readIndex(path, conf))
        assert(e.file == path.toString)
        assert(e.getMessage.startsWith(s"State pack $path is unusable: "), e.getMessage)
        e
      }
      assert(refusal(good.dropRight(3)).getMessage.contains("does not start and end with the pack header"))
      assert(refusal(Array.emptyByteArray).getMessage.contains("does not start and end with the pack header"))
      assert(refusal(bytes("PAR1" + "x" * 40)).getMessage.contains("does not start and end with the pack header"))
      // The footer: index offset (8 bytes), then the magic.
      val footer = good.length - 8 - StatePack.Magic.length
      val farOffset = good.clone()
      ByteBuffer.wrap(farOffset, footer, 8).putLong(good.length.toLong)
      assert(refusal(farOffset).getMessage.contains(s"its index offset ${good.length} is out of range"))
      // The index: count (int), then the entry's path (UTF), offset (long) and length (int).
      val indexOffset = ByteBuffer.wrap(good, footer, 8).getLong.toInt
      val longer = good.clone()
      ByteBuffer.wrap(longer, indexOffset + 4 + 2 + "state/0/0/1.heap-delta".length + 8, 4).putInt(1000)
      assert(refusal(longer).getMessage.contains("entry state/0/0/1.heap-delta lies outside the data section"))
      // A negative length is refused the same way, not left to fail the entry's read.
      val negative = good.clone()
      ByteBuffer.wrap(negative, indexOffset + 4 + 2 + "state/0/0/1.heap-delta".length + 8, 4).putInt(-1)
      assert(refusal(negative).getMessage.contains("entry state/0/0/1.heap-delta lies outside the data section"))
      val countless = good.clone()
      ByteBuffer.wrap(countless, indexOffset, 4).putInt(5)
      assert(refusal(countless).getMessage.contains("its index cannot be read"))
      Files.write(local(path), good)
      assert(PackDirectory.readIndex(path, conf) == Some(index))
    }
  }

  test("an entry read from a pack is checked: changed bytes, a short pack, a pack deleted meanwhile") {
    withCheckpoint { root =>
      val rel = "state/0/0/1.heap-delta"
      val (path, index, _) = write(root, 1, Seq(rel -> "one"))
      val e = index.entries.head
      def read(): Array[Byte] = PackDirectory.readEntry(path.toString, e.offset, e.length, e.crc, rel, conf)
      rewrite(path) { b => b(e.offset.toInt) = 'O'.toByte; b }
      val changed = intercept[CorruptPackException](read())
      assert(changed.file == path.toString)
      assert(changed.getMessage.contains(s"the bytes of $rel do not match their checksum"))
      rewrite(path)(_.take(e.offset.toInt + 1))
      val short = intercept[CorruptPackException](read())
      assert(short.file == path.toString)
      assert(short.getMessage.contains(s"it is truncated: $rel (3 bytes at offset ${e.offset}) lies past its end"))
      // Not corrupt: the caller asks again where the file is now.
      Files.delete(local(path))
      intercept[FileNotFoundException](read())
    }
  }

  test("replaying packs gives each file's newest copy, without the files a later pack deleted") {
    withCheckpoint { root =>
      write(root, 1, Seq("state/0/0/1.heap-delta" -> "a1", "state/0/0/2.heap-delta" -> "b1", "state/0/1/1.heap-delta" -> "c"))
      write(root, 2, Seq("state/0/0/2.heap-delta" -> "b22", "state/0/0/3.heap-delta" -> "d"),
        deleted = Seq("state/0/0/1.heap-delta"))
      val packs = CheckpointPacks.read(root, "q-1", conf)
      assert(packs.packs.map(p => (p.seq, p.path.getName, p.index.batchId)) == Seq((1L, "1.pack", 0L), (2L, "2.pack", 0L)))
      assert(packs.files.map { case (rel, f) => rel -> (f.seq, f.pack.getName, f.length) } == Map(
        "state/0/0/2.heap-delta" -> ((2L, "2.pack", 3)),
        "state/0/0/3.heap-delta" -> ((2L, "2.pack", 1)),
        "state/0/1/1.heap-delta" -> ((1L, "1.pack", 1))))
      val b = packs.files("state/0/0/2.heap-delta")
      assert(new String(PackDirectory.readEntry(b.pack.toString, b.offset, b.length, b.crc, "b", conf), UTF_8) == "b22")
      assert(packs.list("state/0/0").toSet == Set("state/0/0/2.heap-delta" -> 3L, "state/0/0/3.heap-delta" -> 1L))
      assert(packs.list("state/0/1/") == Seq("state/0/1/1.heap-delta" -> 1L))
      assert(packs.list("state/0").isEmpty)
    }
  }

  test("packs from a later number on are a checkpoint whose oldest packs were cleaned up; a gap is a lost pack") {
    withCheckpoint { root =>
      assert(CheckpointPacks.read(root, "q-1", conf).packs.isEmpty)
      write(root, 4, Seq("state/0/0/1.heap-delta" -> "a"))
      write(root, 5)
      assert(CheckpointPacks.read(root, "q-1", conf).packs.map(_.seq) == Seq(4L, 5L))
      write(root, 7)
      val e = intercept[CorruptPackException](CheckpointPacks.read(root, "q-1", conf))
      assert(e.file == PackDirectory.path(root, 6).toString)
      assert(e.getMessage.contains("it is missing, while packs 5.pack and 7.pack exist"))
    }
  }

  test("a pack of another query is refused; a query id unknown on either side is not checked") {
    withCheckpoint { root =>
      write(root, 1, queryId = "q-1")
      write(root, 2, queryId = "")
      val e = intercept[CorruptPackException](CheckpointPacks.read(root, "q-2", conf))
      assert(e.file == PackDirectory.path(root, 1).toString)
      assert(e.getMessage.contains(s"it belongs to query q-1, but the checkpoint $root is of query q-2"))
      assert(CheckpointPacks.read(root, "", conf).packs.size == 2)
      assert(CheckpointPacks.read(root, "q-1", conf).packs.size == 2)
    }
  }

  test("the cleaner deletes the packs it is given and nothing else") {
    withCheckpoint { root =>
      val paths = (1L to 4L).map(write(root, _)._1)
      val cleaner = new PackCleaner(conf)
      cleaner.schedule(root, paths.take(2))
      assert(cleaner.awaitIdle(10000))
      assert(PackDirectory.sequences(root, conf) == Seq(3L, 4L))
      // Already gone: not an error, and the rest of the queue still goes.
      cleaner.schedule(root, paths.take(3))
      assert(cleaner.awaitIdle(10000))
      assert(PackDirectory.sequences(root, conf) == Seq(4L))
    }
  }

  test("a pack the cleaner cannot delete holds back the newer ones of its checkpoint only, until the next pass") {
    withCheckpoint { root =>
      withCheckpoint { other =>
        val paths = (1L to 3L).map(write(root, _)._1)
        // A non-empty directory in place of pack 1: its delete fails.
        Files.delete(local(paths.head))
        Files.createDirectories(local(paths.head).resolve("x"))
        val cleaner = new PackCleaner(conf)
        cleaner.schedule(root, paths.take(2))
        val otherPack = write(other, 1)._1
        cleaner.schedule(other, Seq(otherPack))
        assert(cleaner.awaitIdle(10000))
        assert(Files.exists(local(paths(1))), "a newer pack went while an older one stayed")
        assert(PackDirectory.sequences(other, conf).isEmpty)
        Files.delete(local(paths.head).resolve("x"))
        cleaner.schedule(root, Nil)
        assert(cleaner.awaitIdle(10000))
        assert(PackDirectory.sequences(root, conf) == Seq(3L))
      }
    }
  }

  test("a forgotten checkpoint's queued packs are not deleted by a later pass") {
    withCheckpoint { root =>
      val paths = (1L to 2L).map(write(root, _)._1)
      Files.delete(local(paths.head))
      Files.createDirectories(local(paths.head).resolve("x"))
      val cleaner = new PackCleaner(conf)
      cleaner.schedule(root, paths)
      assert(cleaner.awaitIdle(10000))
      cleaner.forget(root)
      Files.delete(local(paths.head).resolve("x"))
      cleaner.schedule(root, Nil)
      assert(cleaner.awaitIdle(10000))
      assert(PackDirectory.sequences(root, conf) == Seq(1L, 2L))
    }
  }

  test("the cleaner deletes the leftovers of failed pack writes up to a number, never a pack or a newer leftover") {
    withCheckpoint { root =>
      (1L to 3L).foreach(write(root, _))
      // Real leftovers: atomic writes of packs that never finished.
      val unfinished = Seq(2L, 3L, 4L).map(n => FileSystemOperations.createAtomic(PackDirectory.path(root, n), overwrite = false, conf))
      try {
        val leftovers = names(root).filter(FileSystemOperations.isTemp)
        assert(leftovers.toSeq.flatMap(StatePack.leftoverSeq).sorted == Seq(2L, 3L, 4L))
        val cleaner = new PackCleaner(conf)
        cleaner.removeLeftovers(root, 3)
        assert(cleaner.awaitIdle(10000))
        assert(names(root) == Set("1.pack", "2.pack", "3.pack") ++ leftovers.filter(n => StatePack.leftoverSeq(n).contains(4L)))
        // A checkpoint without packs: nothing to do, and no error.
        withCheckpoint { empty =>
          cleaner.removeLeftovers(empty, 3)
          assert(cleaner.awaitIdle(10000))
        }
      } finally unfinished.foreach(_.cancel())
    }
  }
}
