package io.sparkcheckpointstorage.coordinator

import java.io.File
import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.Files
import java.util.concurrent.{Callable, ExecutionException, Executors, Future, TimeoutException, TimeUnit}

import scala.collection.mutable
import scala.util.Random

import org.apache.hadoop.conf.Configuration
import org.apache.spark.api.plugin.PluginContext
import org.apache.spark.scheduler.SparkListenerEvent
import org.scalatest.{BeforeAndAfterAll, BeforeAndAfterEach}
import org.scalatest.funsuite.AnyFunSuite

import io.sparkcheckpointstorage.layout.SparkSettingKeys
import io.sparkcheckpointstorage.monitoring.{CheckpointBatchCommitted, CheckpointCommitFailed, CheckpointMonitor,
  CheckpointQueryStarted, CheckpointSavepointTaken}
import io.sparkcheckpointstorage.packs.{CorruptPackException, PackDirectory}

/**
 * The coordinator under concurrency: no request waits for another query's file I/O, puts
 * that race a pack write land in the next pack, and the durability order (batch N's state
 * restorable before `commits/N`) holds with several queries committing and restoring at once.
 */
class CheckpointCoordinatorSuite extends AnyFunSuite with BeforeAndAfterEach with BeforeAndAfterAll {
  private val dirs = mutable.ArrayBuffer[File]()
  private val pool = Executors.newCachedThreadPool()
  private var executorContext: Option[PluginContext] = None

  override def afterEach(): Unit = {
    PausingFileSystem.pause.foreach(_.release.countDown())
    PausingFileSystem.pause = None
    DriverRuntime.useForTests(None)
    executorContext.foreach(CoordinatorClient.disconnect)
    executorContext = None
    dirs.foreach(org.apache.commons.io.FileUtils.deleteQuietly)
    dirs.clear()
  }

  override def afterAll(): Unit = pool.shutdownNow()

  private def newCheckpoint(queryId: String): File = {
    val dir = Files.createTempDirectory("scs-coord").toFile
    dirs += dir
    Files.write(new File(dir, "metadata").toPath, s"""{"id":"$queryId"}""".getBytes(UTF_8))
    dir
  }

  /** A new checkpoint of query `queryId`, and its root as the file manager names it. */
  private def newRoot(queryId: String): (File, String) = {
    val dir = newCheckpoint(queryId)
    (dir, new File(dir.getAbsolutePath).toURI.toString.stripSuffix("/"))
  }

  private val conf: Configuration = {
    val c = new Configuration()
    PausingFileSystem.conf.foreach { case (k, v) => c.set(k, v) }
    c
  }

  private def put(root: String, rel: String, content: String): PutInline =
    PutInline(root, rel, content.getBytes(UTF_8), "test storage", persistent = true, keepInHeap = false)

  /** The content of `rel` as a coordinator serves it, from heap or from its pack. */
  private def read(c: CheckpointCoordinator, root: String, rel: String): Option[String] =
    c.handle(GetInline(root, rel)) match {
      case InlineBytes(b) => Some(new String(b, UTF_8))
      case InPack(pack, offset, length, crc) =>
        Some(new String(PackDirectory.readEntry(pack, offset, length, crc, rel, conf), UTF_8))
      case NotInline => None
      case other => fail(s"GetInline($root, $rel) answered $other")
    }

  /** A new checkpoint of query `queryId` whose batch 0 committed one inline file (pack 1), and its coordinator. */
  private def afterFirstBatch(queryId: String): (File, String, CheckpointCoordinator) = {
    val (dir, root) = newRoot(queryId)
    val c = new CheckpointCoordinator(conf, Long.MaxValue)
    c.handle(put(root, "state/0/0/1.heap-delta", "v1"))
    c.beforeCommit(root, 0)
    (dir, root, c)
  }

  private def async[T](body: => T): Future[T] = pool.submit(new Callable[T] { def call(): T = body })

  /** The result of `f`; a minute without one means it waited on something it must not. */
  private def within[T](f: Future[T], what: String): T =
    try f.get(60, TimeUnit.SECONDS) catch {
      case _: TimeoutException => fail(s"$what did not complete: it waited for another query's file I/O")
      case e: ExecutionException => throw e.getCause
    }

  test("a pack write held on the file system stalls no request and no other query's commit") {
    val (dirA, dirB) = (newCheckpoint("qa"), newCheckpoint("qb"))
    val (a, b) = (PausingFileSystem.root(dirA), PausingFileSystem.root(dirB))
    val c = new CheckpointCoordinator(conf, Long.MaxValue)
    assert(c.handle(put(a, "state/0/0/1.heap-delta", "a1")) == Done)
    assert(c.handle(put(b, "state/0/0/1.heap-delta", "b1")) == Done)
    val pause = new PausingFileSystem.Pause(p => p.toString.startsWith(a) && p.getName.endsWith(".pack"))
    PausingFileSystem.pause = Some(pause)
    val commitA = async(c.beforeCommit(a, 0))
    assert(pause.awaitEntered(), "query A's pack write never reached the file system")

    within(async {
      assert(c.handle(put(b, "state/0/1/1.heap-delta", "b2")) == Done)
      assert(read(c, b, "state/0/0/1.heap-delta").contains("b1"))
      assert(c.handle(put(a, "state/0/1/1.heap-delta", "a2")) == Done)
      assert(read(c, a, "state/0/0/1.heap-delta").contains("a1"))
      c.beforeCommit(b, 0)
    }, "Requests of both queries and query B's commit")
    assert(new File(dirB, "state-packs/1.pack").exists())
    assert(!new File(dirA, "state-packs/1.pack").exists(), "query A's pack write is still held")

    pause.release.countDown()
    within(commitA, "Query A's commit")
    assert(new File(dirA, "state-packs/1.pack").exists())
  }

  test("a restore reading its packs stalls no other query") {
    val (dirA, dirB) = (newCheckpoint("qa"), newCheckpoint("qb"))
    val (a, b) = (PausingFileSystem.root(dirA), PausingFileSystem.root(dirB))
    val before = new CheckpointCoordinator(conf, Long.MaxValue)
    before.handle(put(a, "state/0/0/1.heap-delta", "a1"))
    before.beforeCommit(a, 0)
    val c = new CheckpointCoordinator(conf, Long.MaxValue)  // a restarted driver
    val pause = new PausingFileSystem.Pause(p => p.toString.startsWith(a) && p.getName.endsWith(".pack"))
    PausingFileSystem.pause = Some(pause)
    val restoreA = async(read(c, a, "state/0/0/1.heap-delta"))
    assert(pause.awaitEntered(), "query A's restore never reached its pack")

    within(async {
      assert(c.handle(put(b, "state/0/0/1.heap-delta", "b1")) == Done)
      assert(read(c, b, "state/0/0/1.heap-delta").contains("b1"))
      c.beforeCommit(b, 0)
    }, "Query B's requests and commit")

    pause.release.countDown()
    assert(within(restoreA, "Query A's restore").contains("a1"))
  }

  test("puts and deletes racing a pack write land in the next pack, exactly") {
    val dir = newCheckpoint("q")
    val root = PausingFileSystem.root(dir)
    val c = new CheckpointCoordinator(conf, Long.MaxValue)
    c.handle(put(root, "state/0/0/1.heap-delta", "x-old"))
    c.handle(put(root, "state/0/0/2.heap-delta", "y"))
    val pause = new PausingFileSystem.Pause(p => p.getName == "1.pack")
    PausingFileSystem.pause = Some(pause)
    val commit = async(c.beforeCommit(root, 0))
    assert(pause.awaitEntered())
    // While pack 1 is written from x-old and y: x is replaced, y deleted, z added.
    within(async {
      c.handle(put(root, "state/0/0/1.heap-delta", "x-new"))
      c.handle(DeleteInline(root, "state/0/0/2.heap-delta"))
      c.handle(put(root, "state/0/0/3.heap-delta", "z"))
    }, "Requests during the pack write")
    pause.release.countDown()
    within(commit, "The commit")
    assert(read(c, root, "state/0/0/1.heap-delta").contains("x-new"), "pack 1 must not shadow the newer put")
    assert(read(c, root, "state/0/0/2.heap-delta").isEmpty)
    assert(c.heldInlineBytes == "x-new".length + "z".length, "only the unpacked files stay in heap")

    // Batch 0's state as committed: pack 1 alone restores x-old and y.
    val atBatch0 = new CheckpointCoordinator(conf, Long.MaxValue)
    assert(read(atBatch0, root, "state/0/0/1.heap-delta").contains("x-old"))
    assert(read(atBatch0, root, "state/0/0/2.heap-delta").contains("y"))
    c.beforeCommit(root, 1)
    val atBatch1 = new CheckpointCoordinator(conf, Long.MaxValue)
    assert(read(atBatch1, root, "state/0/0/1.heap-delta").contains("x-new"))
    assert(read(atBatch1, root, "state/0/0/2.heap-delta").isEmpty)
    assert(read(atBatch1, root, "state/0/0/3.heap-delta").contains("z"))
    assert(c.heldInlineBytes == 0)
  }

  test("a directory's listing holds its own files only, after puts, deletes and a restore from packs") {
    val (dir, root) = newRoot("q")
    def listing(c: CheckpointCoordinator, relDir: String): Set[(String, Long)] =
      c.handle(ListInline(root, relDir)) match {
        case Listing(files) => files.toSet
        case other => fail(s"ListInline answered $other")
      }
    val c = new CheckpointCoordinator(conf, Long.MaxValue)
    Seq("state/0/1/1.heap-delta" -> "a", "state/0/1/2.heap-delta" -> "bb", "state/0/10/1.heap-delta" -> "ccc",
      "state/0/1/x/1.heap-delta" -> "dddd", "state/1/1/1.heap-delta" -> "e")
      .foreach { case (rel, content) => assert(c.handle(put(root, rel, content)) == Done) }
    // Neither a sibling sharing the name's prefix (10) nor a subdirectory's file is the directory's.
    val own = Set("state/0/1/1.heap-delta" -> 1L, "state/0/1/2.heap-delta" -> 2L)
    assert(listing(c, "state/0/1") == own)
    assert(listing(c, "state/0/1/") == own)
    assert(listing(c, "state/0/10") == Set("state/0/10/1.heap-delta" -> 3L))
    assert(listing(c, "state/0") == Set.empty)
    assert(listing(c, "state/0/2") == Set.empty)
    c.beforeCommit(root, 0)
    assert(c.handle(DeleteInline(root, "state/0/1/1.heap-delta")) == Done)
    assert(c.handle(put(root, "state/0/1/3.heap-delta", "fff")) == Done)
    // Batch 2 commits version 3; the stores that hold version 1 only are not behind it.
    c.beforeCommit(root, 2)
    val after = Set("state/0/1/2.heap-delta" -> 2L, "state/0/1/3.heap-delta" -> 3L)
    assert(listing(c, "state/0/1") == after)
    // A restarted driver rebuilds the same listing from the packs.
    assert(listing(new CheckpointCoordinator(conf, Long.MaxValue), "state/0/1") == after)
    assert(c.handle(DeleteInline(root, "state/0/10/1.heap-delta")) == Done)
    assert(listing(c, "state/0/10") == Set.empty)
  }

  test("a failed pack write keeps its changes pending: the next commit writes them") {
    val (dir, root) = newRoot("q")
    val c = new CheckpointCoordinator(conf, Long.MaxValue)
    c.handle(put(root, "state/0/0/1.heap-delta", "v1"))
    // Pack 1 cannot be written: a file stands where its directory goes.
    Files.write(new File(dir, "state-packs").toPath, Array[Byte](1))
    intercept[java.io.IOException](c.beforeCommit(root, 0))
    assert(new File(dir, "state-packs").delete())
    c.beforeCommit(root, 0)
    assert(read(new CheckpointCoordinator(conf, Long.MaxValue), root, "state/0/0/1.heap-delta").contains("v1"))
  }

  test("the coordinator reports starts, restores, commits, failed commits and savepoints to the monitor it was given") {
    val (dir, root) = newRoot("q-m")
    val posted = mutable.ArrayBuffer[SparkListenerEvent]()
    val monitor = new CheckpointMonitor(e => posted.synchronized(posted += e), conf, Map.empty, () => 0L, 10L)
    val c = new CheckpointCoordinator(conf, 10L, Some(monitor))
    try {
      c.queryStarting(root, Seq(SparkSettingKeys.ShufflePartitions -> "3"), "test storage")
      c.commitLogListed(root, Array.empty)
      c.handle(put(root, "state/0/0/1.heap-delta", "v1"))
      c.batchCommitted(root, 0, c.beforeCommit(root, 0))
      // Over the driver's limit of 10 bytes: refused, and reported as the failed commit of batch 1.
      assert(c.handle(put(root, "state/0/0/2.heap-delta", "0123456789ab")).isInstanceOf[Failed])
      // The pack of batch 2 cannot be written: a file stands where it goes.
      c.handle(put(root, "state/0/0/3.heap-delta", "v3"))
      Files.write(new File(dir, "state-packs/2.pack").toPath, Array[Byte](1))
      intercept[java.io.IOException](c.beforeCommit(root, 2))
      c.savepointTaken(root, "q-m", 0, "/savepoints/s1")
      assert(monitor.awaitIdle(30000))
      val events = posted.synchronized(posted.toList)
      assert(events.collect { case e: CheckpointQueryStarted => (e.queryId, e.storage, e.statePartitions) } ==
        Seq(("q-m", "test storage", 3)), events)
      assert(events.collect { case e: CheckpointBatchCommitted => (e.batch.batchId, e.batch.packName, e.batch.stateFiles) } ==
        Seq((0L, "1.pack", 1)), events)
      assert(events.collect { case e: CheckpointCommitFailed => (e.batchId, e.kind) } ==
        Seq((1L, "StateSizeLimit"), (2L, "Pack")), events)
      assert(events.collect { case e: CheckpointSavepointTaken => (e.batchId, e.path) } == Seq((0L, "/savepoints/s1")))
    } finally monitor.stop()
  }

  test("a query that stops after a failed pack write leaves its unpacked state for the next run's commit") {
    val (dir, root, c) = afterFirstBatch("q")
    c.handle(put(root, "state/0/0/2.heap-delta", "v2"))
    Files.write(new File(dir, "state-packs/2.pack").toPath, Array[Byte](1))  // pack 2 exists: its write fails
    intercept[java.io.IOException](c.beforeCommit(root, 1))
    assert(c.queryTerminated("q") == Seq(root))
    assert(c.heldInlineBytes == 2, "the unpacked state is still held")
    // The next run's tasks send nothing (an exactly-once sink skips the batch it committed):
    // its commit packs what the failed one could not.
    assert(new File(dir, "state-packs/2.pack").delete())
    c.beforeCommit(root, 1)
    assert(read(new CheckpointCoordinator(conf, Long.MaxValue), root, "state/0/0/2.heap-delta").contains("v2"))
    assert(c.queryTerminated("q") == Seq(root))
    assert(c.heldInlineBytes == 0 && c.knownRoots.isEmpty)
  }

  test("a commit whose stores hold no state of its version is refused, naming the batch and the stores") {
    val (dir, root) = newRoot("q")
    val c = new CheckpointCoordinator(conf, Long.MaxValue)
    Seq(0, 1).foreach(p => c.handle(put(root, s"state/0/$p/1.heap-delta", "v1")))
    c.beforeCommit(root, 0)
    // A new driver: batch 1's tasks ran in the old one, which died before packing their state.
    val restarted = new CheckpointCoordinator(conf, Long.MaxValue)
    restarted.handle(put(root, "state/0/0/2.heap-delta", "v2"))
    val e = intercept[StateNotDurableException](restarted.beforeCommit(root, 1))
    assert(e.getMessage.contains("Batch 1 of the streaming query with checkpoint " + root + " cannot commit"))
    assert(e.getMessage.contains("state/0/1 hold no state of version 2"))
    assert(e.getMessage.contains("last complete batch stays 0"))
    assert(!e.getMessage.contains("state/0/0 "))
    // A store whose version is a file of its own is durable: the commit goes through.
    new File(dir, "state/0/1").mkdirs()
    Files.write(new File(dir, "state/0/1/2.heap-delta").toPath, Array[Byte](1))
    assert(restarted.beforeCommit(root, 1).packed.map(_.files.map(_._1)).contains(Seq("state/0/0/2.heap-delta")))
  }

  test("a commit reports its pack's size and the files of their own the executors wrote, without looking for them") {
    val (dir, root) = newRoot("q")
    val c = new CheckpointCoordinator(conf, Long.MaxValue)
    c.handle(put(root, "state/0/0/1.heap-delta", "v1"))
    // Files of their own, reported as written; none of them is on disk: the commit takes the
    // writers' word and never lists the checkpoint's state.
    assert(c.handle(OwnFileWritten(root, "state/0/1/1.heap-delta", 30000L)) == Done)
    assert(c.handle(WritePending(root, "state/1/0/1.heap-delta", "w-1", "7", 25000L)) == Done)
    c.handle(WriteDone(root, "state/1/0/1.heap-delta", "w-1", ""))
    // A later version (the next batch's task, early) and an older one (maintenance's snapshot).
    c.handle(OwnFileWritten(root, "state/0/1/2.heap-delta", 40000L))
    c.handle(OwnFileWritten(root, "state/0/0/0.heap-snapshot", 50000L))
    // Written inline, then again as a file of its own by a retried task: the file counts.
    c.handle(put(root, "state/0/2/1.heap-delta", "inline first"))
    c.handle(OwnFileWritten(root, "state/0/2/1.heap-delta", 21000L))
    val first = c.beforeCommit(root, 0)
    assert(first.ownFiles == Seq("state/0/1/1.heap-delta" -> 30000L, "state/0/2/1.heap-delta" -> 21000L,
      "state/1/0/1.heap-delta" -> 25000L))
    assert(first.packed.map(p => (p.files.map(_._1), p.packName)).contains((Seq("state/0/0/1.heap-delta"), "1.pack")))
    assert(first.packed.map(_.packBytes).contains(new File(dir, "state-packs/1.pack").length()))
    // The early file of version 2 waited for its batch; the snapshot of version 0 is gone.
    c.handle(put(root, "state/0/0/2.heap-delta", "v2"))
    assert(c.beforeCommit(root, 1).ownFiles == Seq("state/0/1/2.heap-delta" -> 40000L))
    c.handle(put(root, "state/0/0/3.heap-delta", "v3"))
    assert(c.beforeCommit(root, 2).ownFiles.isEmpty)
    // A stopped query's reports are forgotten.
    c.handle(OwnFileWritten(root, "state/0/1/4.heap-delta", 1L))
    c.release(root)
    c.handle(put(root, "state/0/0/4.heap-delta", "v4"))
    assert(c.beforeCommit(root, 3).ownFiles.isEmpty)
  }

  /** The last answer to the end of task `partition` of `stage` (of `of`), its pack's polls followed to the end. */
  private def taskEnds(c: CheckpointCoordinator, root: String, batch: Long, stage: Int, partition: Int,
      of: Int): CoordinatorReply =
    followed(c, root, c.handle(StageTaskDone(root, batch, stage, partition, of)))

  /** `first`, or once it is [[StageEndPending]], the answer its write ends with. */
  private def followed(c: CheckpointCoordinator, root: String, first: CoordinatorReply): CoordinatorReply = {
    var reply = first
    val deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60)
    while (reply.isInstanceOf[StageEndPending] && System.nanoTime() < deadline) {
      Thread.sleep(5)
      reply = c.handle(AwaitStageEnd(root, reply.asInstanceOf[StageEndPending].id))
    }
    reply
  }

  test("a stage's last task is answered only once the pack of the stage's state is written") {
    val (dir, root, c) = afterFirstBatch("q")
    c.handle(put(root, "state/0/0/2.heap-delta", "p0"))
    assert(c.handle(StageTaskDone(root, 1, 7, 0, 2)) == Done, "a stage with a task running writes no pack")
    assert(!new File(dir, "state-packs/2.pack").exists())
    assert(c.stageEndWaits.getCount == 0, "a task that waits for nothing is not timed")
    c.handle(put(root, "state/0/1/2.heap-delta", "p1"))
    val last = c.handle(StageTaskDone(root, 1, 7, 1, 2))
    assert(last.isInstanceOf[StageEndPending], last)
    // A copy of the last task ending meanwhile is answered only once the pack is on disk too.
    assert(taskEnds(c, root, 1, 7, 1, 2) == Done)
    assert(new File(dir, "state-packs/2.pack").exists(), "the last task's answer waits for the pack")
    // The first task's write is answered once, then forgotten: a task asking again (or after a
    // driver restart) fails, and reruns. (The copy's write may have taken the root's lock
    // first and packed the state: the first one then ends after it, with nothing to write.)
    val id = last.asInstanceOf[StageEndPending].id
    assert(followed(c, root, last) == Done)
    c.handle(AwaitStageEnd(root, id)) match {
      case Failed(FailureKind.IllegalState, message, _) =>
        assert(message == s"The driver knows no write $id making a stage's state durable: it restarted, or the " +
          "checkpoint's query stopped meanwhile. The task fails, and Spark runs it again.", message)
      case other => fail(s"a forgotten write answered $other")
    }
    // A stage of another operator in the same batch gets a pack of its own, and its wait is timed.
    val timed = c.stageEndWaits.getCount
    assert(timed >= 1, "the stage's pack write is timed")
    c.handle(put(root, "state/1/0/2.heap-delta", "o1"))
    assert(taskEnds(c, root, 1, 8, 0, 1) == Done)
    assert(new File(dir, "state-packs/3.pack").exists())
    assert(c.stageEndWaits.getCount == timed + 1)
    assert(c.stageEndWaits.getSnapshot.getMax >= 0)
    // A stage of the next batch already runs (asynchronous progress tracking): its ended task
    // still counts after this batch's commit.
    c.handle(OwnFileWritten(root, "state/0/0/3.heap-delta", 10L))
    assert(c.handle(StageTaskDone(root, 2, 9, 0, 2)) == Done)
    // The batch's commit writes no pack: it reports those of its stages.
    val packed = c.beforeCommit(root, 1).packed
    assert(packed.map(p => (p.files.map(_._1).toSet, p.packName)).contains(
      (Set("state/0/0/2.heap-delta", "state/0/1/2.heap-delta", "state/1/0/2.heap-delta"), "3.pack")))
    assert(!new File(dir, "state-packs/4.pack").exists())
    c.handle(put(root, "state/0/1/3.heap-delta", "n1"))
    assert(taskEnds(c, root, 2, 9, 1, 2) == Done)
    assert(new File(dir, "state-packs/4.pack").exists(), "the next batch's stage ended with both its tasks")
    val restarted = new CheckpointCoordinator(conf, Long.MaxValue)
    assert(Seq("state/0/0/2.heap-delta", "state/0/1/2.heap-delta", "state/1/0/2.heap-delta").map(read(restarted, root, _)) ==
      Seq(Some("p0"), Some("p1"), Some("o1")))
  }

  test("a failed pack write fails the stage's last task; its rerun writes the pack, and a task run again writes none") {
    val (dir, root) = newRoot("q")
    val c = new CheckpointCoordinator(conf, Long.MaxValue)
    c.handle(put(root, "state/0/0/1.heap-delta", "v1"))
    c.handle(put(root, "state/0/1/1.heap-delta", "w1"))
    assert(c.handle(StageTaskDone(root, 0, 3, 1, 2)) == Done)
    // Pack 1 cannot be written: a file stands where its directory goes.
    Files.write(new File(dir, "state-packs").toPath, Array[Byte](1))
    val failed = taskEnds(c, root, 0, 3, 0, 2)
    assert(failed.isInstanceOf[Failed] && failed.asInstanceOf[Failed].kind == FailureKind.Io, failed)
    assert(new File(dir, "state-packs").delete())
    // The task runs again, sends the same state, and ends: the pack is written now.
    c.handle(put(root, "state/0/0/1.heap-delta", "v1"))
    assert(taskEnds(c, root, 0, 3, 0, 2) == Done)
    assert(new File(dir, "state-packs/1.pack").exists())
    // A task of the stage run again after that (a speculative copy, a resubmitted stage) sends the same bytes.
    c.handle(put(root, "state/0/1/1.heap-delta", "w1"))
    val timed = c.stageEndWaits.getCount
    assert(timed == 2, "the failed write's wait and its rerun's are both timed")
    assert(c.handle(StageTaskDone(root, 0, 3, 1, 2)) == Done, "nothing is left to pack")
    assert(c.stageEndWaits.getCount == timed)
    c.beforeCommit(root, 0)
    assert(!new File(dir, "state-packs/2.pack").exists(), "a second commit of a partition writes no second pack")
    assert(read(new CheckpointCoordinator(conf, Long.MaxValue), root, "state/0/1/1.heap-delta").contains("w1"))
  }

  test("a stage's last task waits for the state files written in the background, and fails with one that failed") {
    val (_, root) = newRoot("q")
    val c = new CheckpointCoordinator(conf, Long.MaxValue)
    c.handle(WritePending(root, "state/0/0/1.heap-delta", "w-1", "exec-1", 10L))
    val pending = c.handle(StageTaskDone(root, 0, 2, 0, 1))
    assert(pending.isInstanceOf[StageEndPending], pending)
    val id = pending.asInstanceOf[StageEndPending].id
    Thread.sleep(50)
    assert(c.handle(AwaitStageEnd(root, id)) == pending, "the background write is not done")
    c.handle(WriteDone(root, "state/0/0/1.heap-delta", "w-1", "No space left on device"))
    var failed = c.handle(AwaitStageEnd(root, id))
    while (failed == pending) { Thread.sleep(5); failed = c.handle(AwaitStageEnd(root, id)) }
    assert(failed.isInstanceOf[Failed] && failed.asInstanceOf[Failed].message.contains("No space left on device"), failed)
    // The last task run again rewrites its own files only: it fails again, and so does the commit.
    assert(taskEnds(c, root, 0, 2, 0, 1).isInstanceOf[Failed])
    intercept[StateNotDurableException](c.beforeCommit(root, 0))
  }

  test("a pack written at a stage's end is reported with the batch's commit, and leftovers of failed writes go") {
    val (dir, root) = newRoot("q")
    val c = new CheckpointCoordinator(conf, Long.MaxValue)
    c.handle(put(root, "state/0/0/1.heap-delta", "v1"))
    new File(dir, "state-packs").mkdirs()
    val leftover = new File(dir, "state-packs/.1.pack.0b8e2c1e-tmp.tmp")
    Files.write(leftover.toPath, Array[Byte](1))
    c.beforeCommit(root, 0)
    c.handle(put(root, "state/0/0/2.heap-delta", "v2"))
    assert(taskEnds(c, root, 1, 5, 0, 1) == Done)
    assert(new File(dir, "state-packs/2.pack").exists(), "the stage's end waits for the pack")
    val packed = c.beforeCommit(root, 1).packed
    assert(packed.map(p => (p.files.map(_._1), p.packName)).contains((Seq("state/0/0/2.heap-delta"), "2.pack")))
    assert(packed.map(_.packBytes).contains(new File(dir, "state-packs/2.pack").length()))
    assert(!new File(dir, "state-packs/3.pack").exists())
    // Restored, the root's next pack has the leftovers deleted.
    val restarted = new CheckpointCoordinator(conf, Long.MaxValue)
    restarted.handle(put(root, "state/0/0/3.heap-delta", "v3"))
    restarted.beforeCommit(root, 2)
    assert(restarted.awaitPackCleanup(60000))
    assert(!leftover.exists())
    assert(new File(dir, "state-packs/3.pack").exists())
  }

  test("several queries committing and restoring at once: each batch's state is restorable when its commit returns") {
    val queries = 6
    val partitions = 8
    val batches = 6
    val roots = (0 until queries).map(q => newRoot(s"q$q")._2)
    /** Query q, partition p, batch n's content: version n + 1 of the partition's state. */
    def content(q: Int, p: Int, n: Int): String = s"q$q-p$p-b$n-" + "x" * new Random(q * 1000 + p * 10 + n).nextInt(300)
    def rel(p: Int, version: Int): String = s"state/0/$p/$version.heap-delta"

    // Queries 3-5 ran their first two batches in a previous driver: they restore from packs.
    val previous = new CheckpointCoordinator(conf, Long.MaxValue)
    (3 until queries).foreach { q =>
      (0 until 2).foreach { n =>
        (0 until partitions).foreach(p => previous.handle(put(roots(q), rel(p, n + 1), content(q, p, n))))
        previous.beforeCommit(roots(q), n)
      }
    }
    previous.awaitPackCleanup(60000)

    val c = new CheckpointCoordinator(conf, Long.MaxValue)
    val senders = Executors.newFixedThreadPool(8)
    val runs = (0 until queries).map { q =>
      async {
        val first = if (q >= 3) 2 else 0
        if (q >= 3) {
          // The restore: tasks read the last committed batch's state back.
          (0 until partitions).foreach(p => assert(read(c, roots(q), rel(p, 2)).contains(content(q, p, 1))))
        }
        (first until batches).foreach { n =>
          // The batch's tasks, on several executors: each puts its partition's new version
          // and deletes the version maintenance no longer needs.
          val tasks = (0 until partitions).map { p =>
            senders.submit(new Callable[Unit] {
              def call(): Unit = {
                assert(c.handle(put(roots(q), rel(p, n + 1), content(q, p, n))) == Done)
                if (n >= 2) assert(c.handle(DeleteInline(roots(q), rel(p, n - 1))) == Done)
              }
            })
          }
          tasks.foreach(_.get())
          c.beforeCommit(roots(q), n)
          // Here Spark writes commits/n: a driver dying now restarts from exactly this state.
          c.awaitPackCleanup(60000)
          val restarted = new CheckpointCoordinator(conf, Long.MaxValue)
          (0 until partitions).foreach { p =>
            assert(read(restarted, roots(q), rel(p, n + 1)).contains(content(q, p, n)), s"query $q batch $n partition $p")
            if (n >= 1) assert(read(restarted, roots(q), rel(p, n)).contains(content(q, p, n - 1)))
            if (n >= 2) assert(read(restarted, roots(q), rel(p, n - 1)).isEmpty, "a deletion is durable with its batch")
          }
        }
      }
    }
    try runs.zipWithIndex.foreach { case (r, q) => within(r, s"Query $q") } finally senders.shutdown()
    assert(c.heldInlineBytes == 0, "every packed file was released from heap")
  }

  test("on an executor, a corrupt pack is raised as the CorruptPackException it is") {
    val (dir, root) = newRoot("q")
    val driver = new CheckpointCoordinator(conf, Long.MaxValue)
    driver.handle(put(root, "state/0/0/1.heap-delta", "v1"))
    driver.beforeCommit(root, 0)
    Files.write(new File(dir, "state-packs/1.pack").toPath, "garbage".getBytes(UTF_8))
    val restarted = new CoordinatorEndpoint(new CheckpointCoordinator(conf, Long.MaxValue))
    executorContext = Some(new PluginContext {
      override def ask(message: AnyRef): AnyRef = restarted.receive(message)
      override def send(message: AnyRef): Unit = ()
      override def metricRegistry() = null
      override def conf() = null
      override def executorID() = "1"
      override def hostname() = "localhost"
      override def resources() = java.util.Collections.emptyMap()
    })
    executorContext.foreach(ctx => CoordinatorClient.connect(ctx, ctx.ask _, RequestBatcher.DefaultMaxBatchBytes))
    val e = intercept[CorruptPackException](CoordinatorClient.read(root, "state/0/0/1.heap-delta", conf))
    assert(e.file.endsWith("state-packs/1.pack") && e.getMessage.contains("1.pack is unusable"), e.getMessage)
  }
}
