// Spark 4.0-4.3: `transformWithState` and its `TransformWithStateSuite` exist.
package io.sparkcheckpointstorage.provider

import java.io.File
import java.nio.charset.StandardCharsets
import java.nio.file.Files

import org.apache.commons.io.FileUtils
import org.apache.hadoop.fs.Path
import org.scalactic.source.Position
import org.scalatest.Tag

import org.apache.spark.SparkConf
import org.apache.spark.sql.QueryTest
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.streaming.{OutputMode, RunningCountStatefulProcessor, TimeMode, TransformWithStateSuite}
import org.apache.spark.sql.test.SharedSparkSession

import io.sparkcheckpointstorage.coordinator.CheckpointStoragePlugin
import io.sparkcheckpointstorage.filemanager.StorageCheckpointFileManager
import io.sparkcheckpointstorage.layout.SparkSettingKeys
import io.sparkcheckpointstorage.storage.CheckpointStorageOptions

/**
 * Spark's `TransformWithStateSuite` (the line's spark-sql `tests` jar) with every checkpoint
 * file going through [[StorageCheckpointFileManager]] and one of our checkpoint storages.
 * Spark accepts only its RocksDB provider for `transformWithState`, so the suite's tests run
 * on it as they do in Spark (with and without changelog checkpointing): what they prove here
 * is that Spark's expected results hold with RocksDB's changelogs in packs, its snapshot zips
 * and the operator's schema and metadata files written through our file manager, across the
 * suite's restarts and its state data source reads.
 *
 * `spark.plugins` is static, so the coordinator plugin is set on the suite's SparkContext;
 * the file manager and the storage are set around each test body, inside which a test that
 * names its own file manager keeps it.
 */
trait TransformWithStateOnStorageTest extends QueryTest with SharedSparkSession {

  /** The session settings that select the storage under test. */
  protected def storageConf: Seq[(String, String)]

  /** The storage's name in test names. */
  protected def storageName: String

  /**
   * Tests to skip: (prefix of the base suite's test name, reason). Override with a `def`
   * (tests are registered while the base class is constructed).
   */
  protected def notApplicable: Seq[(String, String)] = Nil

  /**
   * The tests `test` runs in CI (prefixes of test names), one per thing the suite exercises:
   * value state; value, list and map state in one processor; processing- and event-time
   * timers; a restart from the checkpoint; the state data source reading old batches back;
   * and (file system storage) where RocksDB's files went. The others get a tag that
   * build.sbt's `test` excludes unless SCS_SPARK_SUITES=all.
   */
  protected def ciSubset: Seq[String] = Seq(
    "transformWithState - streaming with rocksdb should succeed",
    "transformWithState - verify StateSchemaV3 writes correct SQL schema of key/value with " +
      "useImplicits=false (encoding = unsaferow)",
    "transformWithState - streaming with rocksdb and processing time timer should succeed",
    "transformWithState - streaming with rocksdb and event time based timer",
    "test query restart succeeds",
    "state data source integration - value state supports time travel",
    "RocksDB's changelogs are packed")

  override protected def sparkConf: SparkConf =
    super.sparkConf.set("spark.plugins", CheckpointStoragePlugin.ClassName)

  override protected def test(testName: String, testTags: Tag*)(testBody: => Any)
      (implicit pos: Position): Unit =
    SparkTestCompat.registerOrSkip(notApplicable, testName, Some(storageName))(
        name => super.ignore(name, testTags: _*)(())) { name =>
      val tags = if (ciSubset.exists(testName.startsWith)) testTags
        else testTags :+ TransformWithStateOnStorageTest.OutsideCiSubset
      super.test(name, tags: _*) {
        val fileManager = SparkSettingKeys.FileManagerClass -> classOf[StorageCheckpointFileManager].getName
        withSQLConf(fileManager +: storageConf: _*) {
          SparkTestCompat.guard(testBody)
        }
      }
    }
}

object TransformWithStateOnStorageTest {
  /** The tag of the tests outside [[TransformWithStateOnStorageTest.ciSubset]]; build.sbt names it too. */
  object OutsideCiSubset extends Tag("io.sparkcheckpointstorage.OutsideCiSubset")
}

class TransformWithStateOnFileSystemStorageSuite extends TransformWithStateSuite
    with TransformWithStateOnStorageTest {
  // The query's own checkpoint location is the storage's directory: each test's packs go
  // under the checkpoint it made.
  override protected def storageConf: Seq[(String, String)] =
    Seq(CheckpointStorageOptions.Storage -> "filesystem")
  override protected def storageName: String = "FileSystemCheckpointStorage"

  import testImplicits._

  // Spark's tests check results, not where the state went: this one checks the checkpoint
  // of a two-batch query, with and without changelog checkpointing like the others. RocksDB
  // reads its changelogs back through the file manager, so they are packed; it opens its
  // snapshot zips past the file manager, so those stay files of their own (StateFileNaming).
  test("RocksDB's changelogs are packed, its snapshot zips stay files") {
    withSQLConf(SQLConf.SHUFFLE_PARTITIONS.key -> "2") {
      withTempDir { dir =>
        val input = new File(dir, "input")
        val checkpoint = new File(dir, "checkpoint")
        Files.createDirectories(input.toPath)
        val query = spark.readStream.textFile(input.getCanonicalPath)
          .groupByKey(identity)
          .transformWithState(new RunningCountStatefulProcessor(), TimeMode.None(), OutputMode.Update())
          .writeStream.format("noop").outputMode("update")
          .option("checkpointLocation", checkpoint.getCanonicalPath)
          .start()
        try Seq("a", "b").foreach { key =>
          Files.write(new File(input, s"$key.txt").toPath, key.getBytes(StandardCharsets.UTF_8))
          query.processAllAvailable()
        } finally query.stop()

        val store = new File(checkpoint, "state/0/0")
        val onDisk = store.list().toSeq
        // After the stop, the coordinator serves the query's inline files from its packs.
        val listed = new StorageCheckpointFileManager(new Path(store.getCanonicalPath),
          spark.sessionState.newHadoopConf()).list(new Path(store.getCanonicalPath)).map(_.getPath.getName).toSeq
        if (isChangelogCheckpointingEnabled) {
          assert(listed.count(_.endsWith(".changelog")) == 2, listed)
          assert(!onDisk.exists(_.endsWith(".changelog")), onDisk)
          assert(Option(new File(checkpoint, "state-packs").list()).exists(_.nonEmpty))
        } else {
          assert(onDisk.count(_.endsWith(".zip")) == 2, onDisk)
          assert(listed.filter(_.endsWith(".zip")).sorted == onDisk.filter(_.endsWith(".zip")).sorted)
          assert(!listed.exists(_.endsWith(".changelog")), listed)
        }
      }
    }
  }
}

/**
 * The driver storage with a checkpoint path, its setting for queries that are stopped and
 * started again, as the suite's are: every batch then also writes the pack a restarted
 * query's state is read back from. Without a path the coordinator drops a query's state when
 * the query stops; the suite passes that way too, its restarts staying in one JVM.
 */
class TransformWithStateOnDriverStorageSuite extends TransformWithStateSuite
    with TransformWithStateOnStorageTest {
  private lazy val storagePath: File = Files.createTempDirectory("scs-tws-driver").toFile

  override protected def storageConf: Seq[(String, String)] = Seq(
    CheckpointStorageOptions.Storage -> "driver",
    CheckpointStorageOptions.CheckpointPath -> storagePath.getCanonicalPath)
  override protected def storageName: String = "DriverCheckpointStorage"

  override def afterAll(): Unit =
    try super.afterAll() finally FileUtils.deleteQuietly(storagePath)
}
