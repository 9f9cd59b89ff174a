package io.sparkcheckpointstorage.storage

import org.scalatest.funsuite.AnyFunSuite

import io.sparkcheckpointstorage.layout.SparkSettingKeys
import io.sparkcheckpointstorage.storage.CheckpointStorageOptions._

class CheckpointStorageSettingsSuite extends AnyFunSuite {
  import CheckpointStorageSettings._

  private def refusedAtStartup(settings: (String, String)*): String =
    intercept[IllegalCheckpointStorageArgumentException](validateAtStartup(settings)).getMessage

  private def refusedForQuery(settings: (String, String)*): String =
    intercept[IllegalCheckpointStorageArgumentException](validateForQuery(settings, "file:/q")).getMessage

  /** The first line names the setting, the value and what is allowed. */
  private def assertNames(message: String, key: String, value: String, allowed: String): Unit = {
    val first = message.linesIterator.next()
    assert(first.startsWith(s"Invalid value '$value' for $key: "), message)
    assert(first.contains(allowed), message)
  }

  test("every size setting: a value that is not a size, and one out of range") {
    val cases = Seq(
      (MaxStateSize, "lots", "0", "at least 1 byte and below 2g"),
      (FileStateSizeThreshold, "20 kilo", "2m", "from 0 to 1m"),
      (WriteBufferSize, "big", "3g", "from 0 to below 2g"),
      (DriverMaxTotalInlineSize, "much", "0", "at least 1 byte"),
      (ExecutorMaxRequestBatchSize, "some", "65m", "from 0 (each request on its own) to 64m"))
    cases.foreach { case (key, notASize, outOfRange, allowed) =>
      val bad = refusedAtStartup(key -> notASize)
      assertNames(bad, key, notASize, allowed)
      assert(bad.contains("(not a size)"), bad)
      val over = refusedAtStartup(key -> outOfRange)
      assertNames(over, key, outOfRange, allowed)
      assert(over.contains(" bytes)"), over)
    }
  }

  test("session settings are checked when a query starts, static ones when the session starts") {
    Seq(MaxStateSize -> "lots", FileStateSizeThreshold -> "2m", WriteBufferSize -> "3g").foreach { case (k, v) =>
      assertNames(refusedForQuery(k -> v), k, v, "expected")
    }
    // Static settings were read when the session started; a query does not read them again.
    assert(validateForQuery(Seq(DriverMaxTotalInlineSize -> "much"), "file:/q") == FileSystemCheckpointStorage("file:/q"))
    assertNames(refusedAtStartup(ExternalizedCleanup -> "KEEP"), ExternalizedCleanup, "KEEP",
      "expected RETAIN_ON_CANCELLATION or DELETE_ON_CANCELLATION")
    assert(ExternalizedCleanupSetting.parse(" delete_on_cancellation ") == "DELETE_ON_CANCELLATION")
  }

  test("the storage name: a misspelt name, a class that is no storage, a storage without a directory") {
    val misspelt = refusedForQuery(Storage -> "filesytem")
    assertNames(misspelt, Storage, "filesytem", "expected 'driver', 'filesystem', or the name of a class")
    assert(misspelt.contains("no such class on the classpath"), misspelt)
    assert(refusedAtStartup(Storage -> "filesytem") == misspelt)
    assertNames(refusedForQuery(Storage -> "java.lang.String"), Storage, "java.lang.String", "implementing")
    assert(validateForQuery(Seq(Storage -> "driver", MaxStateSize -> "1m"), "file:/q") == DriverCheckpointStorage(maxStateSize = Some(1 << 20)))
    val noDir = intercept[IllegalCheckpointStorageArgumentException](
      CheckpointStorageLoader.load(Map(Storage -> "filesystem").get _)).getMessage
    assertNames(noDir, Storage, "filesystem", "expected")
    assert(noDir.contains(CheckpointPath), noDir)
  }

  test("paths: an empty one and one that is no URI") {
    assertNames(refusedForQuery(CheckpointPath -> " "), CheckpointPath, " ", "expected a file system path or URI")
    assertNames(refusedForQuery(SavepointPath -> "1cp:/x"), SavepointPath, "1cp:/x", "expected a file system path or URI")
  }

  test("an unknown name is refused, with the nearest setting when it looks like a typo") {
    val typo = refusedForQuery(s"$Prefix.fileStateSizeTreshold" -> "1k")
    assert(typo.startsWith(s"Unknown setting $Prefix.fileStateSizeTreshold (value '1k')"), typo)
    assert(typo.contains(s"Did you mean $FileStateSizeThreshold?"), typo)
    val far = refusedAtStartup(s"$Prefix.compression" -> "zstd")
    assert(far.startsWith(s"Unknown setting $Prefix.compression"), far)
    assert(!far.contains("Did you mean"), far)
    assert(refusedForQuery(s"${AppPrefix}color" -> "red").contains(s"Unknown setting ${AppPrefix}color"))
    // The storage set in code (Python) and every documented setting are known.
    validateAtStartup(AppKeys.map(_ -> "1").filterNot(_._1.endsWith("kind")) ++ Seq(AppPrefix + "kind" -> "driver"))
  }

  test("a storage class of the user's may read settings of its own under the prefix") {
    val storage = validateForQuery(Seq(Storage -> classOf[TinyStorageFactory].getName, s"$Prefix.tiny.size" -> "7"), "file:/q")
    assert(storage == new DriverCheckpointStorage(7))
  }

  test("a misspelt provider of this package is refused; other providers are Spark's to check") {
    val misspelt = "io.sparkcheckpointstorage.provider.HeapStateStoreProvder"
    assertNames(refusedForQuery(SparkSettingKeys.ProviderClass -> misspelt), SparkSettingKeys.ProviderClass, misspelt,
      "expected io.sparkcheckpointstorage.provider.HeapStateStoreProvider")
    validateForQuery(Seq(SparkSettingKeys.ProviderClass -> "io.sparkcheckpointstorage.provider.HeapStateStoreProvider"), "file:/q")
    validateForQuery(Seq(SparkSettingKeys.ProviderClass -> "com.example.SomeProvider"), "file:/q")
  }
}
