package io.sparkcheckpointstorage.formats

import java.io.{ByteArrayInputStream, ByteArrayOutputStream, DataOutputStream}
import java.nio.charset.StandardCharsets
import java.nio.file.Files

import org.apache.hadoop.conf.Configuration
import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.SparkConf

import io.sparkcheckpointstorage.BuildInfo
import io.sparkcheckpointstorage.layout.StorageMarker
import io.sparkcheckpointstorage.migration.CanonicalSavepoints
import io.sparkcheckpointstorage.packs.{CorruptPackException, StatePack}
import io.sparkcheckpointstorage.provider.{CompactRowMap, CorruptStateFileException, StateFileFormat, StateFileKind}
import io.sparkcheckpointstorage.results.{ResultCodec, SavepointManifest}

class FileFormatSuite extends AnyFunSuite {
  private val file = "/cp/state/0/0/7.heap-delta"

  /** The start of a file of a later binary format: its magic, then the release that reads it. */
  private def laterBinary(magic: String, release: String): Array[Byte] = {
    val bytes = new ByteArrayOutputStream()
    val out = new DataOutputStream(bytes)
    out.write(magic.getBytes(StandardCharsets.ISO_8859_1))
    out.writeUTF(release)
    out.write(new Array[Byte](64))
    out.flush()
    bytes.toByteArray
  }

  private def readStateFile(bytes: Array[Byte]): Unit =
    StateFileFormat.read(new ByteArrayInputStream(bytes), file, StateFileKind.Delta, 7, 1, 1, new SparkConf())(
      (_, _) => (), _ => ())

  private def readsVersions(format: FileFormat): String =
    s"spark-checkpoint-storage ${BuildInfo.version} reads versions ${format.oldestRead}" +
      (if (format.oldestRead == format.current) " only" else s" to ${format.current}")

  test("a state file of a later format is refused in one sentence naming the file, the versions read and the release to upgrade to") {
    val e = intercept[UnsupportedFormatException](readStateFile(laterBinary("SCSHEAP\u0003", "0.4.0")))
    assert(e.getMessage == s"$file is a state file of format version 3, and ${readsVersions(FileFormat.StateFile)} " +
      "of it: upgrade spark-checkpoint-storage to at least 0.4.0.")
    assert(e.file == file)
  }

  test("a state file of a format before any release names no release to use, and a foreign file is still corrupt") {
    val older = intercept[UnsupportedFormatException](readStateFile(laterBinary("SCSHEAP\u0001", "")))
    assert(older.getMessage.contains("format version 1"))
    assert(older.getMessage.endsWith("no release of spark-checkpoint-storage reads it: restart the query from a " +
      "new checkpoint location."))
    intercept[CorruptStateFileException](readStateFile(laterBinary("PAR1xxxx", "")))
  }

  test("a format version a release stopped reading names the last release that reads it") {
    val format = FileFormat("state pack", current = 3, oldestRead = 2, lastReaders = Map(1 -> "0.4.2"))
    val e = intercept[UnsupportedFormatException](format.check("/cp/state-packs/1.pack", 1, None))
    assert(e.getMessage == s"/cp/state-packs/1.pack is a state pack of format version 1, and spark-checkpoint-storage " +
      s"${BuildInfo.version} reads versions 2 to 3 of it: take a savepoint of it with spark-checkpoint-storage 0.4.2, " +
      "the last release that reads it, and restart from the savepoint.")
    Seq(2, 3).foreach(v => format.check("p", v, throw new AssertionError("asked for the release of a version it reads")))
  }

  test("today's state files name format version 2 in their magic") {
    val header = StateFileFormat.header(StateFileKind.Delta, 7, "lz4", CompactRowMap.Layout(1, 1024))
    assert(new String(header.take(8), StandardCharsets.ISO_8859_1) == "SCSHEAP\u0002")
    assert(FileFormat.StateFile.current == 2)
  }

  test("a pack of a later format is refused, not reported corrupt") {
    val e = intercept[UnsupportedFormatException](StatePack.readIndex(laterBinary("SCSPACK2", "0.5.1"), "/cp/state-packs/4.pack"))
    assert(e.getMessage == s"/cp/state-packs/4.pack is a state pack of format version 2, and " +
      s"${readsVersions(FileFormat.Pack)} of it: upgrade spark-checkpoint-storage to at least 0.5.1.")
    // Today's packs name version 1 and still read; a truncated one is still corrupt.
    val out = new ByteArrayOutputStream()
    StatePack.write(out, 3L, "q", Seq("state/0/0/4.heap-delta" -> Array[Byte](1, 2)), Nil)
    val bytes = out.toByteArray
    assert(new String(bytes.take(8), StandardCharsets.US_ASCII) == "SCSPACK1")
    assert(StatePack.readIndex(bytes, "4.pack").entries.map(_.relPath) == Seq("state/0/0/4.heap-delta"))
    intercept[CorruptPackException](StatePack.readIndex(bytes.dropRight(3), "4.pack"))
  }

  test("the storage marker names its format and the oldest release that reads the checkpoint") {
    val marker = StorageMarker("filesystem", persistent = true, keepInHeap = false)
    assert(marker.text.linesIterator.take(2).toSeq ==
      Seq("formatVersion=1", s"minReaderVersion=${FileFormat.MinReaderVersion}"))
    assert(StorageMarker.parse(marker.text, "m") == marker)
    // A marker written before it named its format is version 1.
    assert(StorageMarker.parse("storage=driver\npersistent=true\nkeepInHeap=true\n", "m") ==
      StorageMarker("driver", persistent = true, keepInHeap = true))
  }

  test("a storage marker of a later format refuses the whole checkpoint, naming the release it gives") {
    val later = "formatVersion=2\nminReaderVersion=0.3.0\nstorage=filesystem\npersistent=true\n"
    val e = intercept[UnsupportedFormatException](StorageMarker.parse(later, "/cp/checkpoint-storage"))
    assert(e.getMessage == s"/cp/checkpoint-storage is a storage marker of format version 2, and " +
      s"${readsVersions(FileFormat.Marker)} of it: upgrade spark-checkpoint-storage to at least 0.3.0.")
    val noRelease = intercept[UnsupportedFormatException](StorageMarker.parse("formatVersion=5\n", "m"))
    assert(noRelease.getMessage.endsWith("upgrade spark-checkpoint-storage to at least a release that reads version 5."))
    val garbled = intercept[UnsupportedFormatException](StorageMarker.parse("formatVersion=two\n", "m"))
    assert(garbled.getMessage.contains("names formatVersion 'two', not a number"))
  }

  test("manifests name their format first; a canonical savepoint of a later format is refused") {
    val json = ResultCodec.manifestJson(SavepointManifest(3, Some("q"), 4, 100, 2, 1L), FileFormat.SavepointManifest)
    assert(json.startsWith(s"""{"formatVersion":1,"minReaderVersion":"${FileFormat.MinReaderVersion}","batchId":3,"""))
    val dir = Files.createTempDirectory("scs-formats")
    try {
      val manifest = dir.resolve("_savepoint")
      Files.write(manifest, """{"formatVersion":2,"minReaderVersion":"0.9.0","format":"canonical","batchId":1}"""
        .getBytes(StandardCharsets.UTF_8))
      val e = intercept[UnsupportedFormatException](CanonicalSavepoints.manifest(dir.toUri.toString, new Configuration()))
      assert(e.getMessage.contains("is a canonical savepoint manifest of format version 2"))
      assert(e.getMessage.endsWith("upgrade spark-checkpoint-storage to at least 0.9.0."))
      // One written before manifests named their release (format version 1) reads.
      Files.write(manifest, """{"format":"canonical","formatVersion":1,"batchId":1}""".getBytes(StandardCharsets.UTF_8))
      assert(CanonicalSavepoints.manifest(dir.toUri.toString, new Configuration()).map(_.get("batchId").asLong()).contains(1L))
    } finally {
      Files.walk(dir).sorted(java.util.Comparator.reverseOrder()).forEach(p => Files.delete(p))
    }
  }
}
