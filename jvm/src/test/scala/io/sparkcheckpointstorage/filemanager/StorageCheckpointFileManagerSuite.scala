package io.sparkcheckpointstorage.filemanager

import java.io.File
import java.nio.charset.StandardCharsets
import java.nio.file.Files

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.scalatest.BeforeAndAfterEach
import org.scalatest.funsuite.AnyFunSuite

import io.sparkcheckpointstorage.coordinator.{CheckpointCoordinator, DriverRuntime, QueryNotRunningException,
  StateMaintenanceScope}
import io.sparkcheckpointstorage.packs.StatePack
import io.sparkcheckpointstorage.storage.CheckpointStorageOptions._

/** The file manager and the driver coordinator together, in one JVM (the driver's view). */
class StorageCheckpointFileManagerSuite extends AnyFunSuite with BeforeAndAfterEach {
  private var dir: File = _
  private var root: String = _

  override def beforeEach(): Unit = {
    dir = Files.createTempDirectory("scs-fm").toFile
    root = new Path(dir.getAbsolutePath).toUri.toString.stripSuffix("/")
    Files.write(new File(dir, "metadata").toPath, """{"id":"query-1"}""".getBytes(StandardCharsets.UTF_8))
    restartDriver()
  }

  override def afterEach(): Unit = {
    DriverRuntime.useForTests(None)
    org.apache.commons.io.FileUtils.deleteQuietly(dir)
  }

  private def conf(settings: (String, String)*): Configuration = {
    val c = new Configuration()
    (Seq(Storage -> "filesystem", FileStateSizeThreshold -> "100") ++ settings).foreach { case (k, v) => c.set(k, v) }
    c
  }

  /** A new coordinator: what a restarted driver has. */
  private def restartDriver(maxHeld: Long = Long.MaxValue): Unit =
    DriverRuntime.useForTests(Some(new CheckpointCoordinator(new Configuration(), maxHeld)))

  private def fm(c: Configuration = conf()) = new StorageCheckpointFileManager(new Path(s"$root/state/0/0"), c)
  private def statePath(name: String) = new Path(s"$root/state/0/0/$name")
  private def onDisk(rel: String) = new File(dir, rel).exists()

  private def write(m: StorageCheckpointFileManager, name: String, size: Int, fill: Byte = 1): Unit = {
    val out = m.createAtomic(statePath(name), true)
    out.write(Array.fill[Byte](size)(fill))
    out.close()
  }

  private def read(m: StorageCheckpointFileManager, name: String): Array[Byte] = {
    val in = m.open(statePath(name))
    try org.apache.commons.io.IOUtils.toByteArray(in) finally in.close()
  }

  private def commit(m: StorageCheckpointFileManager, batch: Long): Unit = {
    val c = new StorageCheckpointFileManager(new Path(s"$root/commits"), conf())
    val out = c.createAtomic(new Path(s"$root/commits/$batch"), false)
    out.write("v1".getBytes(StandardCharsets.UTF_8))
    out.close()
  }

  /**
   * Settings of the fault file system (`faulty://<path>` is the local `<path>`) that record
   * every operation named by `opsAndPaths` ("<op> <path regex>") and fail none, and what it
   * recorded so far (one "<op>\t<kind>\t<path>" line each).
   */
  private def recording(opsAndPaths: String*): (Configuration, () => Seq[String]) =
    faulting(opsAndPaths.map { r => val Array(op, path) = r.split(" ", 2); s"$op stall=0 $path *" }: _*)

  /** Settings of the fault file system failing as `rules` say (FaultPlan's rules), and its log. */
  private def faulting(rules: String*): (Configuration, () => Seq[String]) = {
    val work = new File(dir, "faults")
    work.mkdirs()
    Files.write(new File(work, "rules").toPath, rules.map(_ + "\n").mkString.getBytes(StandardCharsets.UTF_8))
    val log = new File(work, "ops.log")
    val c = conf("fs.faulty.impl" -> "io.sparkcheckpointstorage.faults.FaultInjectingFileSystem",
      "fs.faulty.impl.disable.cache" -> "true",
      "fs.AbstractFileSystem.faulty.impl" -> "io.sparkcheckpointstorage.faults.FaultInjectingFs",
      "fs.faulty.rules.file" -> new File(work, "rules").getPath, "fs.faulty.log" -> log.getPath)
    (c, () => if (log.exists()) Files.readAllLines(log.toPath).toArray.toSeq.map(_.toString) else Nil)
  }

  test("at the threshold a state file goes inline, one byte over it is a file of its own") {
    val m = fm()
    write(m, "1.heap-delta", 100)
    write(m, "2.heap-delta", 101)
    assert(!onDisk("state/0/0/1.heap-delta"))
    assert(onDisk("state/0/0/2.heap-delta"))
    assert(read(m, "1.heap-delta").length == 100)
    assert(read(m, "2.heap-delta").length == 101)
    assert(m.list(new Path(s"$root/state/0/0")).map(_.getPath.getName).toSet == Set("1.heap-delta", "2.heap-delta"))
    assert(m.exists(statePath("1.heap-delta")) && !m.exists(statePath("3.heap-delta")))
  }

  test("state maintenance touches a checkpoint only while its query runs: once it stopped, nothing comes back into the driver") {
    val c = DriverRuntime.coordinator.get
    val m = fm()
    val dir = new Path(s"$root/state/0/0")
    def maintain[T](body: => T): T = StateMaintenanceScope.run(body)
    // Before the query's first commit in this driver (a new query, or one restarted), maintenance waits.
    intercept[QueryNotRunningException](maintain(write(m, "1.heap-snapshot", 10)))
    assert(c.knownRoots.isEmpty)
    write(m, "1.heap-delta", 10)
    commit(m, 0)
    maintain(write(m, "1.heap-snapshot", 10))
    assert(maintain(m.list(dir)).map(_.getPath.getName).toSet == Set("1.heap-delta", "1.heap-snapshot"))
    assert(c.heldInlineBytes == 10)

    // The query stops. Its stores' maintenance goes on until the executors learn of it: it
    // must not load the checkpoint again, nor leave bytes in the driver that no commit packs.
    assert(c.queryTerminated("query-1").map(new Path(_).toUri.getPath) == Seq(new Path(root).toUri.getPath))
    assert(c.knownRoots.isEmpty && c.heldInlineBytes == 0)
    val refused = intercept[QueryNotRunningException](maintain(write(m, "2.heap-snapshot", 10)))
    assert(refused.getMessage.contains(s"No streaming query runs on checkpoint file:$root"), refused.getMessage)
    intercept[QueryNotRunningException](maintain(m.list(dir)))
    intercept[QueryNotRunningException](maintain(m.delete(statePath("1.heap-delta"))))
    // A snapshot too large to be inline is written all the same (a file of its own, complete).
    intercept[QueryNotRunningException](maintain(write(m, "3.heap-snapshot", 101)))
    assert(onDisk("state/0/0/3.heap-snapshot"))
    assert(c.knownRoots.isEmpty && c.heldInlineBytes == 0)

    // The query starts again: its tasks read the state (no maintenance), its first commit
    // lets maintenance in again. The inline snapshot taken after the last commit was in no
    // pack: it went with the stop (the deltas hold the state); the one written as a file stays.
    assert(read(m, "1.heap-delta").length == 10)
    assert(m.list(dir).map(_.getPath.getName).toSet == Set("1.heap-delta", "3.heap-snapshot"))
    write(m, "2.heap-delta", 10)
    commit(m, 1)
    maintain(write(m, "2.heap-snapshot", 10))
    assert(read(m, "2.heap-snapshot").length == 10)
  }

  test("files a provider reads past the file manager (RocksDB's snapshot zips without a checkpoint id) are never inline") {
    val m = fm()
    // From 4.2 RocksDB reads its snapshots named by a checkpoint id through the file manager.
    val idZip = "4_0123abcd-ef45-6789-abcd-ef0123456789.zip"
    val idZipInline = org.apache.spark.sql.checkpointstorage.shim.RocksDbFilesShim.zipsWithCheckpointIdThroughFileManager
    val ownFiles = Seq("3.zip", "5.zip.crc", "6.other", "SSTs/7-x.sst") ++ (if (idZipInline) Nil else Seq(idZip))
    val inline = Seq("1.heap-delta", "1.delta", "1.snapshot", "1.changelog",
      "1_0123abcd-ef45-6789-abcd-ef0123456789.changelog", "1.delta.crc") ++ (if (idZipInline) Seq(idZip) else Nil)
    (ownFiles ++ inline).foreach(write(m, _, 10))
    // What RocksDB does on load: open the zip through Hadoop's FileSystem, not the file manager.
    val zip = statePath("3.zip")
    val in = zip.getFileSystem(new Configuration()).open(zip)
    try assert(org.apache.commons.io.IOUtils.toByteArray(in).length == 10) finally in.close()
    ownFiles.foreach(name => assert(onDisk(s"state/0/0/$name"), s"$name is not a file of its own"))
    inline.foreach(name => assert(!onDisk(s"state/0/0/$name"), s"$name is not inline"))
  }

  test("commits/N makes the inline state durable first: one pack, restored by a new driver") {
    val m = fm()
    write(m, "1.heap-delta", 10, 7)
    write(m, "2.heap-delta", 20, 8)
    assert(!onDisk("state-packs"))
    commit(m, 0)
    assert(new File(dir, "state-packs").list().toSeq == Seq("1.pack"))
    assert(onDisk("commits/0"))
    restartDriver()
    assert(read(fm(), "1.heap-delta").toSeq == Seq.fill[Byte](10)(7))
    assert(read(fm(), "2.heap-delta").toSeq == Seq.fill[Byte](20)(8))
  }

  test("deletes are durable too, and packs whose files are all gone are deleted") {
    val m = fm()
    write(m, "1.heap-delta", 10)
    commit(m, 0)
    write(m, "2.heap-delta", 10)
    m.delete(statePath("1.heap-delta"))
    commit(m, 1)
    // Deleted in the background, off the commit path.
    assert(DriverRuntime.currentCoordinator().awaitPackCleanup(10000))
    assert(new File(dir, "state-packs").list().toSeq == Seq("2.pack"), "pack 1 holds nothing live")
    restartDriver()
    assert(fm().list(new Path(s"$root/state/0/0")).map(_.getPath.getName).toSeq == Seq("2.heap-delta"))
  }

  /**
   * Commits one inline state file as pack 1, rewrites the pack's bytes with `damage`, and
   * restarts the driver: the error reading the file back.
   */
  private def readFromDamagedPack(damage: Array[Byte] => Array[Byte]): Exception = {
    val m = fm()
    write(m, "1.heap-delta", 50)
    commit(m, 0)
    val pack = new File(dir, "state-packs/1.pack")
    Files.write(pack.toPath, damage(Files.readAllBytes(pack.toPath)))
    restartDriver()
    intercept[Exception](read(fm(), "1.heap-delta"))
  }

  test("a corrupt pack fails the restore with an error naming the pack") {
    val e = readFromDamagedPack { bytes => bytes(30) = (bytes(30) ^ 0x55).toByte; bytes }
    assert(e.getMessage.contains("1.pack"), e.getMessage)
  }

  test("a truncated pack fails with an error naming the pack") {
    val e = readFromDamagedPack(bytes => bytes.take(bytes.length - 3))
    assert(e.getMessage.contains("1.pack") && e.getMessage.contains("truncated"), e.getMessage)
  }

  test("a missing pack (a gap in the numbering) fails the restore naming it") {
    val m = fm()
    (0 to 2).foreach { b => write(m, s"${b + 1}.heap-delta", 50, b.toByte); commit(m, b) }
    assert(new File(dir, "state-packs").list().sorted.toSeq == Seq("1.pack", "2.pack", "3.pack"))
    assert(new File(dir, "state-packs/2.pack").delete())
    restartDriver()
    val e = intercept[Exception](read(fm(), "1.heap-delta"))
    assert(e.getMessage.contains("state-packs/2.pack is unusable: it is missing"), e.getMessage)
  }

  test("a partition committed twice (task retry, speculative attempt) is stored once, the last attempt's") {
    val first = fm()
    write(first, "1.heap-delta", 50, 7)
    // The second attempt runs on another executor: its own file manager. Its bytes differ
    // (a retry may encode the same state differently), so the test sees which one is kept.
    val second = fm()
    write(second, "1.heap-delta", 40, 9)
    assert(read(fm(), "1.heap-delta").toSeq == Seq.fill[Byte](40)(9))
    assert(DriverRuntime.currentCoordinator().heldInlineBytes == 40, "the first attempt's bytes were freed")
    commit(first, 0)
    assert(new File(dir, "state-packs").list().toSeq == Seq("1.pack"))
    val index = StatePack.readIndex(Files.readAllBytes(new File(dir, "state-packs/1.pack").toPath), "1.pack")
    assert(index.entries.map(e => (e.relPath, e.length)) == Seq(("state/0/0/1.heap-delta", 40)),
      "one entry, the second attempt's")
    assert(DriverRuntime.currentCoordinator().heldInlineBytes == 0, "the pack holds the bytes now")
    restartDriver()
    assert(read(fm(), "1.heap-delta").toSeq == Seq.fill[Byte](40)(9))
    assert(fm().list(new Path(s"$root/state/0/0")).map(_.getPath.getName).toSeq == Seq("1.heap-delta"))
  }

  test("a checkpoint spelled with and without its scheme is one checkpoint") {
    val bare = new Path(dir.getAbsolutePath)  // as Spark hands out paths: /tmp/...
    val withScheme = new Path("file:" + dir.getAbsolutePath)  // as Hadoop lists them
    assert(bare.toUri.getScheme == null)
    val m = new StorageCheckpointFileManager(new Path(bare, "state/0/0"), conf())
    val out = m.createAtomic(new Path(bare, "state/0/0/1.heap-delta"), true)
    out.write(Array.fill[Byte](20)(3))
    out.close()
    val other = new StorageCheckpointFileManager(new Path(withScheme, "state/0/0"), conf())
    val in = other.open(new Path(withScheme, "state/0/0/1.heap-delta"))
    try assert(org.apache.commons.io.IOUtils.toByteArray(in).toSeq == Seq.fill[Byte](20)(3)) finally in.close()
    assert(DriverRuntime.currentCoordinator().knownRoots == Seq(withScheme.toString))
    commit(m, 0)
    assert(new File(dir, "state-packs").list().toSeq == Seq("1.pack"))
  }

  test("a pack from another query's checkpoint is refused") {
    val m = fm()
    write(m, "1.heap-delta", 50)
    commit(m, 0)
    Files.write(new File(dir, "metadata").toPath, """{"id":"query-2"}""".getBytes(StandardCharsets.UTF_8))
    restartDriver()
    val e = intercept[Exception](read(fm(), "1.heap-delta"))
    assert(e.getMessage.contains("belongs to query query-1"), e.getMessage)
  }

  test("heap-only driver state cannot be resumed by a new driver") {
    val m = fm(conf(Storage -> "driver"))
    write(m, "1.heap-delta", 10)
    commit(m, 0)
    assert(!onDisk("state-packs"))
    restartDriver()
    val e = intercept[Exception](fm(conf(Storage -> "driver")).list(new Path(s"$root/state/0/0")))
    assert(e.getMessage.contains("is gone") && e.getMessage.contains("checkpoint path"), e.getMessage)
  }

  test("the driver's total inline bytes are bounded with a clear error") {
    restartDriver(maxHeld = 150)
    val m = fm(conf(Storage -> "driver"))
    write(m, "1.heap-delta", 100)
    val e = intercept[Exception](write(m, "2.heap-delta", 100))
    assert(e.getMessage.contains(DriverMaxTotalInlineSize), e.getMessage)
    assert(e.getMessage.contains("limit of 150 bytes"))
  }

  test("driver storage over its max state size fails at close with the exact size") {
    val m = fm(conf(Storage -> "driver", MaxStateSize -> "100"))
    write(m, "1.heap-delta", 100)
    val e = intercept[Exception](write(m, "2.heap-delta", 1000))
    assert(e.getMessage.contains("Size=1000, maxSize=100"), e.getMessage)
  }

  test("non-state files are plain files; the local writer refuses to overwrite when asked") {
    val m = new StorageCheckpointFileManager(new Path(s"$root/offsets"), conf())
    val out = m.createAtomic(new Path(s"$root/offsets/0"), false)
    out.write(1)
    out.close()
    assert(onDisk("offsets/0"))
    intercept[org.apache.hadoop.fs.FileAlreadyExistsException](m.createAtomic(new Path(s"$root/offsets/0"), false).close())
    val cancelled = m.createAtomic(new Path(s"$root/offsets/1"), false)
    cancelled.write(1)
    cancelled.cancel()
    assert(!onDisk("offsets/1"))
    assert(new File(dir, "offsets").list().toSeq == Seq("0"), "no temp files left behind")
  }

  test("an offset log entry whose close threw leaves no temp file, and a temp file left anyway is no entry of the log") {
    val remote = s"faulty://${dir.getAbsolutePath}"
    val offsets = new Path(s"$remote/offsets")
    val temp = java.util.regex.Pattern.quote(s"${dir.getAbsolutePath}/offsets/") + "\\.0\\..*\\.tmp"
    // As Spark's offset log writes an entry: close, and cancel when the close threw.
    def writeFirstEntry(c: Configuration): Unit = {
      val out = new StorageCheckpointFileManager(offsets, c).createAtomic(new Path(offsets, "0"), false)
      out.write("v1".getBytes(StandardCharsets.UTF_8))
      val e = intercept[java.io.IOException](out.close())
      assert(e.getMessage.contains("Injected fault"), e)
      out.cancel()
    }
    def onDiskNames = new File(dir, "offsets").list().toSeq
    // Spark's check that a new query's logs are empty: the checkpoint root's file manager lists them.
    def rootListing(c: Configuration) = new StorageCheckpointFileManager(new Path(remote), c).list(offsets).toSeq

    // The close wrote the temp file, then lost its answer: the temp file is never renamed, and goes.
    val (closeLost, _) = faulting(s"close after $temp")
    writeFirstEntry(closeLost)
    assert(onDiskNames.isEmpty)
    assert(rootListing(closeLost).isEmpty)

    // Its delete failed too: the temp file stays, but no listing of the log shows it.
    val (deleteFails, injected) = faulting(s"close after $temp", s"delete before $temp")
    writeFirstEntry(deleteFails)
    assert(injected().count(_.startsWith("delete")) == 1)
    assert(onDiskNames.size == 1 && onDiskNames.head.startsWith(".0.") && onDiskNames.head.endsWith(".tmp"), onDiskNames)
    assert(rootListing(deleteFails).isEmpty)
    assert(new StorageCheckpointFileManager(offsets, deleteFails).list(offsets).isEmpty)
    // The next attempt writes the entry.
    val (none, _) = faulting()
    val out = new StorageCheckpointFileManager(offsets, none).createAtomic(new Path(offsets, "0"), false)
    out.write("v1".getBytes(StandardCharsets.UTF_8))
    out.close()
    assert(rootListing(none).map(_.getPath.getName) == Seq("0"))
  }

  test("whether the log's next entry exists is answered from memory; an entry another writer created is still refused") {
    val (c, recorded) = recording("listStatus .*", "getFileStatus .*")
    def requests(): Int = recorded().size
    val remote = s"faulty://${dir.getAbsolutePath}"
    new File(dir, "offsets").mkdirs()
    Files.write(new File(dir, "offsets/0").toPath, "v1".getBytes(StandardCharsets.UTF_8))
    val offsets = new Path(s"$remote/offsets")
    val m = new StorageCheckpointFileManager(offsets, c)
    def entry(n: Long) = new Path(offsets, n.toString)
    def add(n: Long, text: String = "ours"): Unit = {
      val out = m.createAtomic(entry(n), false)
      out.write(text.getBytes(StandardCharsets.UTF_8))
      out.close()
    }
    def content(n: Long) = new String(Files.readAllBytes(new File(dir, s"offsets/$n").toPath), StandardCharsets.UTF_8)

    // Spark lists the log when the query starts (its filter of batch files), then asks about
    // each new entry before writing it.
    val batchFiles: org.apache.hadoop.fs.PathFilter = p => p.getName.forall(_.isDigit)
    assert(m.list(offsets, batchFiles).map(_.getPath.getName).toSeq == Seq("0"))
    (1L to 3L).foreach { n =>
      val before = requests()
      assert(!m.exists(entry(n)))
      assert(requests() == before, s"entry $n was looked for on the file system")
      add(n)
    }
    // Entries it knows of are asked of the file system: a purge may have deleted them.
    assert(m.exists(entry(3)) && m.exists(entry(0)))
    // Another driver on the same checkpoint wrote entry 4: memory does not know it, the
    // create-if-absent does.
    Files.write(new File(dir, "offsets/4").toPath, "theirs".getBytes(StandardCharsets.UTF_8))
    assert(!m.exists(entry(4)))
    intercept[org.apache.hadoop.fs.FileAlreadyExistsException](add(4))
    assert(content(4) == "theirs" && content(3) == "ours")

    // A log Spark never listed (a new query's commit log) is listed once, on the first question.
    val commits = new Path(s"$remote/commits")
    val n = new StorageCheckpointFileManager(commits, c)
    val before = requests()
    assert(!n.exists(new Path(commits, "0")))
    val listing = requests() - before
    assert(listing >= 1)
    assert(!n.exists(new Path(commits, "1")))
    assert(requests() - before == listing)
  }

  test("deleting a state file the last listing found inline only asks nothing of the file system") {
    val (c, requests) = recording("delete .*", "getFileStatus .*/state/.*")
    DriverRuntime.useForTests(Some(new CheckpointCoordinator(c, Long.MaxValue)))
    val store = new Path(s"faulty://${dir.getAbsolutePath}/state/0/0")
    val m = new StorageCheckpointFileManager(store, c)
    def put(name: String, size: Int): Unit = {
      val out = m.createAtomic(new Path(store, name), true)
      out.write(Array.fill[Byte](size)(1))
      out.close()
    }
    put("1.heap-delta", 10)
    put("2.heap-delta", 500) // over the threshold: a file of its own
    put("3.heap-delta", 10)
    assert(m.list(store).map(_.getPath.getName).toSet == Set("1.heap-delta", "2.heap-delta", "3.heap-delta"))
    val listed = requests().size
    m.delete(new Path(store, "1.heap-delta"))
    assert(requests().size == listed, requests().drop(listed))
    m.delete(new Path(store, "2.heap-delta"))
    assert(requests().drop(listed).map(_.split("\t")(0)).contains("delete"), requests().drop(listed))
    assert(!onDisk("state/0/0/2.heap-delta"))
    // Written again since the listing, as a file of its own: its delete reaches the file system.
    put("3.heap-delta", 500)
    m.delete(new Path(store, "3.heap-delta"))
    assert(!onDisk("state/0/0/3.heap-delta"))
    assert(m.list(store).isEmpty)
  }

  test("a store directory's listing is answered by the driver from the start's listing and the writes and deletes since, never by the file system") {
    val (c, requests) = recording("listStatus .*/state/.*", "getFileStatus .*/state/.*")
    val coordinator = new CheckpointCoordinator(c, Long.MaxValue)
    DriverRuntime.useForTests(Some(coordinator))
    val faultyRoot = s"faulty://${dir.getAbsolutePath}"
    val store = new Path(s"$faultyRoot/state/0/0")
    // The root as the file manager spells it (Hadoop prints `faulty:///x` as `faulty:/x`).
    val key = new Path(faultyRoot).toString
    val m = new StorageCheckpointFileManager(store, c)
    def put(name: String, size: Int): Unit = {
      val out = m.createAtomic(new Path(store, name), true)
      out.write(Array.fill[Byte](size)(1))
      out.close()
    }
    def names(statuses: Array[org.apache.hadoop.fs.FileStatus]): Map[String, (Boolean, Long)] =
      statuses.map(s => s.getPath.getName -> (s.isDirectory, if (s.isDirectory) 0L else s.getLen)).toMap
    // Before any query started on the checkpoint in this driver, the file system is listed.
    put("1.heap-snapshot", 300) // a previous run's file of its own
    new File(dir, "state/0/1").mkdirs()
    Files.write(new File(dir, "state/0/1/4.heap-delta").toPath, Array.fill[Byte](200)(2))
    val before = requests().size
    assert(names(m.listStoreDirectory(store)).keySet == Set("1.heap-snapshot"))
    assert(requests().drop(before).exists(_.startsWith("listStatus")), requests().drop(before))

    coordinator.queryStarting(key, Nil, "FileSystemCheckpointStorage")
    put("2.heap-delta", 10) // inline
    put("3.heap-delta", 500) // a file of its own
    m.delete(new Path(store, "1.heap-snapshot"))
    val schema = m.createAtomic(new Path(store, "_metadata/schema"), false) // Spark's, through the file manager
    schema.write(Array.fill[Byte](7)(3))
    schema.close()
    val started = requests().size
    val fromDriver = names(m.listStoreDirectory(store))
    val other = names(new StorageCheckpointFileManager(new Path(s"$faultyRoot/state/0/1"), c)
      .listStoreDirectory(new Path(s"$faultyRoot/state/0/1")))
    assert(requests().size == started, requests().drop(started))
    assert(fromDriver == Map("2.heap-delta" -> (false, 10L), "3.heap-delta" -> (false, 500L), "_metadata" -> (true, 0L)))
    assert(other == Map("4.heap-delta" -> (false, 200L)))
    // What the file system holds, listed for real, is the same.
    assert(names(m.list(store)) == fromDriver)
    // The file manager's own shortcut holds too: an inline-only file's delete asks nothing.
    m.delete(new Path(store, "2.heap-delta"))
    assert(requests().drop(started).count(_.startsWith("listStatus")) == 1, requests().drop(started))
    assert(names(m.listStoreDirectory(store)).keySet == Set("3.heap-delta", "_metadata"))

    // Background writes are listed once written, and never when they failed.
    import io.sparkcheckpointstorage.coordinator.{ListStore, StoreListing, WriteDone, WritePending}
    def ownFiles(): Set[String] = coordinator.handle(ListStore(key, "state/0/0")) match {
      case StoreListing(_, Some(files)) => files.map(_._1).toSet
      case other => fail(s"not answered from memory: $other")
    }
    coordinator.handle(WritePending(key, "state/0/0/5.heap-delta", "w-1", "1", 900L))
    coordinator.handle(WritePending(key, "state/0/0/6.heap-delta", "w-2", "1", 900L))
    assert(!ownFiles().contains("5.heap-delta"))
    coordinator.handle(WriteDone(key, "state/0/0/5.heap-delta", "w-1", ""))
    coordinator.handle(WriteDone(key, "state/0/0/6.heap-delta", "w-2", "No space left on device"))
    assert(ownFiles() == Set("3.heap-delta", "_metadata", "5.heap-delta"))
    // A deleted directory takes its files along; the query's end forgets the root.
    m.delete(new Path(store, "_metadata"))
    assert(ownFiles() == Set("3.heap-delta", "5.heap-delta"))
    coordinator.release(key)
    assert(coordinator.handle(ListStore(key, "state/0/0")).isInstanceOf[StoreListing])
    assert(coordinator.handle(ListStore(key, "state/0/0")) match {
      case StoreListing(_, known) => known.isEmpty
      case _ => false
    })
  }

  test("a start whose listing fails leaves its stores' listings to the file system; the next start lists again") {
    val (c, requests) = recording("listStatus .*/state/.*")
    val rules = new File(dir, "faults/rules")
    val recordingRule = new String(Files.readAllBytes(rules.toPath), StandardCharsets.UTF_8)
    val faultyRoot = s"faulty://${dir.getAbsolutePath}"
    val key = new Path(faultyRoot).toString
    val stores = (0 until 4).map(p => s"state/0/$p")
    stores.zipWithIndex.foreach { case (rel, i) =>
      new File(dir, rel).mkdirs()
      Files.write(new File(dir, s"$rel/1.heap-snapshot").toPath, Array.fill[Byte](100 + i)(1))
    }
    def listed(rel: String): Map[String, Long] =
      new StorageCheckpointFileManager(new Path(s"$faultyRoot/$rel"), c).listStoreDirectory(new Path(s"$faultyRoot/$rel"))
        .map(s => s.getPath.getName -> s.getLen).toMap
    def onFileSystem(rel: String): Map[String, Long] =
      Option(new File(dir, rel).listFiles()).getOrElse(Array.empty[File]).map(f => f.getName -> f.length).toMap
    def assertListedForReal(): Unit = stores.foreach { rel =>
      val before = requests().size
      assert(listed(rel) == onFileSystem(rel), rel)
      assert(requests().drop(before).exists(_.startsWith("listStatus")), (rel, requests().drop(before)))
    }

    // The start's listing fails: the query starts all the same, and its stores list for real.
    Files.write(rules.toPath, ("listStatus before .*/state 1\n" + recordingRule).getBytes(StandardCharsets.UTF_8))
    val coordinator = new CheckpointCoordinator(c, Long.MaxValue)
    DriverRuntime.useForTests(Some(coordinator))
    coordinator.queryStarting(key, Nil, "FileSystemCheckpointStorage")
    assert(requests().exists(_.startsWith("listStatus\tbefore\t")), requests())
    assertListedForReal()
    coordinator.release(key)

    // The next start lists again: its stores' listings come from the driver, equal to the file system's.
    val mark = requests().size
    coordinator.queryStarting(key, Nil, "FileSystemCheckpointStorage")
    val started = requests().size
    assert(started > mark, "the start did not list the state files")
    stores.foreach(rel => assert(listed(rel) == onFileSystem(rel), rel))
    assert(requests().size == started, requests().drop(started))
  }
}
