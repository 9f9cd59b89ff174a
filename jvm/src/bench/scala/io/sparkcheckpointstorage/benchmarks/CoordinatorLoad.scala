package io.sparkcheckpointstorage.benchmarks

import java.io.File
import java.lang.management.ManagementFactory
import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.Files
import java.util.concurrent.{Callable, Executors}

import scala.util.Random

import com.fasterxml.jackson.databind.ObjectMapper
import org.apache.spark.SparkContext

import io.sparkcheckpointstorage.coordinator.{CheckpointCoordinator, CoordinatorClient, CoordinatorEndpoint, DriverRuntime,
  CoordinatorReply, CoordinatorRequest, Done, MessageCodec, PutInline}

/**
 * Benchmark W5 (docs/benchmarks.md), the JVM half: simulated executors send state files of
 * 1-64 KiB (log-uniform) to the driver's coordinator through the real plugin RPC, as the
 * tasks of `queries` queries of `partitions` partitions and `stores` stores each would; after
 * each round (a batch) the driver commits every query (writes its pack), timed. Driven by
 * `benchmarks/coordinator_rpc.py`, which starts Spark on `local-cluster` (executors in JVMs
 * of their own) with this class's jar. Never a test: it measures, it does not assert.
 */
object CoordinatorLoad {
  private val MinSize = 1024
  private val MaxSize = 64 * 1024

  /** One sender's results: put latencies (ns), bytes sent, and when it sent (epoch ms). */
  final case class Sent(latenciesNs: Array[Long], bytes: Long, startMs: Long, endMs: Long)

  /**
   * Runs the load; returns JSON with puts/s, MB/s, latency percentiles, commit times and the
   * driver's CPU and heap. `keepInHeap` keeps the bytes in driver heap after packing (the
   * driver storage), else they are released to the packs (the file system storage).
   */
  def run(sc: SparkContext, workDir: String, queries: Int, partitions: Int, stores: Int,
      rounds: Int, executors: Int, sendersPerExecutor: Int, keepInHeap: Boolean,
      maxBytesPerWave: Long, inProcess: Boolean): String = {
    val coordinator = DriverRuntime.coordinator.getOrElse(
      throw new IllegalStateException("start Spark with the checkpoint storage plugin"))
    val roots = (0 until queries).map { q =>
      val dir = new File(workDir, s"q$q")
      dir.mkdirs()
      Files.write(new File(dir, "metadata").toPath, s"""{"id":"w5-query-$q"}""".getBytes(UTF_8))
      dir.toURI.toString.stripSuffix("/")
    }
    val meanSize = (MaxSize - MinSize) / math.log(MaxSize.toDouble / MinSize)
    val perQueryBytes = partitions * stores * meanSize
    val queriesPerWave = math.max(1, math.min(queries, (maxBytesPerWave / perQueryBytes).toInt))
    val os = ManagementFactory.getOperatingSystemMXBean.asInstanceOf[com.sun.management.OperatingSystemMXBean]

    val latencies = new scala.collection.mutable.ArrayBuffer[Array[Long]]()
    var bytes = 0L
    var puts = 0L
    var sendMs = 0L
    var driverCpuNs = 0L
    // The thread running the coordinator's endpoint: the serial part, what one core must carry.
    var endpointNs = 0L
    // Where the rest of the driver's CPU goes, by kind of thread (numbers dropped from names).
    val cpuByThreadKind = scala.collection.mutable.Map[String, Long]().withDefaultValue(0L)
    val commitMs = new scala.collection.mutable.ArrayBuffer[Double]()
    val packBytes = new scala.collection.mutable.ArrayBuffer[Long]()
    (0 until rounds).foreach { round =>
      roots.indices.grouped(queriesPerWave).foreach { wave =>
        val waveRoots = wave.map(roots)
        val cpuBefore = os.getProcessCpuTime
        val threadsBefore = threadCpuTimes()
        val tasksBefore = nativeThreadTicks()
        val sent = if (inProcess) {
          // Sender threads in this JVM, as `executors` executors of `sendersPerExecutor` tasks,
          // each request encoded and queued to one thread that decodes, handles and encodes
          // the reply, as the plugin's RPC thread does: the coordinator's capacity on one
          // core, without the network (and so without batching, which saves messages on it).
          val rpcThread = Executors.newSingleThreadExecutor()
          val endpoint = new CoordinatorEndpoint(coordinator)
          val executorThreads = Executors.newFixedThreadPool(executors)
          val mx = ManagementFactory.getThreadMXBean
          val rpcThreadStartNs = rpcThread.submit(new Callable[Long] { def call(): Long = mx.getCurrentThreadCpuTime }).get()
          val viaOneThread: CoordinatorRequest => CoordinatorReply = { request =>
            val message = MessageCodec.encode(request)
            MessageCodec.decodeReply(rpcThread.submit(new Callable[AnyRef] {
              def call(): AnyRef = endpoint.receive(message)
            }).get().asInstanceOf[Array[Byte]])
          }
          try {
            (0 until executors).map { e =>
              executorThreads.submit(new Callable[Seq[Sent]] {
                def call(): Seq[Sent] = send(waveRoots, partitions, stores, round, e, executors,
                  sendersPerExecutor, keepInHeap, viaOneThread)
              })
            }.flatMap(_.get()).toArray
          } finally {
            executorThreads.shutdown()
            endpointNs += rpcThread.submit(new Callable[Long] {
              def call(): Long = mx.getCurrentThreadCpuTime - rpcThreadStartNs
            }).get()
            rpcThread.shutdown()
          }
        } else {
          sc.parallelize(0 until executors, executors).mapPartitions { it =>
            val executor = it.next()
            send(waveRoots, partitions, stores, round, executor, executors, sendersPerExecutor, keepInHeap,
              put => CoordinatorClient.ask(put)).iterator
          }.collect()
        }
        driverCpuNs += os.getProcessCpuTime - cpuBefore
        threadCpuTimes().foreach { case (id, (name, ns)) =>
          if (name.endsWith("plugin.PluginEndpoint")) endpointNs += ns - threadsBefore.get(id).map(_._2).getOrElse(0L)
        }
        nativeThreadTicks().foreach { case (tid, (name, ticks)) =>
          cpuByThreadKind(name.replaceAll("\\d+", "N")) += (ticks - tasksBefore.get(tid).map(_._2).getOrElse(0L)) * 10000000L
        }
        latencies ++= sent.map(_.latenciesNs)
        bytes += sent.map(_.bytes).sum
        puts += sent.map(_.latenciesNs.length.toLong).sum
        sendMs += sent.map(_.endMs).max - sent.map(_.startMs).min
        waveRoots.foreach { root =>
          val start = System.nanoTime()
          coordinator.beforeCommit(root, round)
          commitMs += (System.nanoTime() - start) / 1e6
          val packs = new File(new java.net.URI(root).getPath, "state-packs").listFiles()
          packBytes += Option(packs).map(_.maxBy(_.getName.stripSuffix(".pack").toLong).length()).getOrElse(0L)
        }
        System.err.println(s"[W5] round ${round + 1}/$rounds, queries ${wave.head + 1}-${wave.last + 1} " +
          s"of $queries: ${sent.map(_.latenciesNs.length).sum} puts")
      }
    }
    val heldBytes = coordinator.heldInlineBytes
    val runtime = Runtime.getRuntime
    System.gc()
    val heapUsed = runtime.totalMemory - runtime.freeMemory
    roots.foreach(coordinator.release)
    System.gc()
    val heapAfterRelease = runtime.totalMemory - runtime.freeMemory

    val all = latencies.flatten.toArray
    java.util.Arrays.sort(all)
    def pct(p: Double): Double = if (all.isEmpty) 0 else all(math.min(all.length - 1, (p * all.length).toInt)) / 1e6
    val sortedCommits = commitMs.sorted
    val out = new java.util.LinkedHashMap[String, Any]()
    out.put("queries", queries); out.put("partitions", partitions); out.put("stores", stores)
    out.put("rounds", rounds); out.put("senders", executors * sendersPerExecutor)
    out.put("mode", if (inProcess) "threads" else "rpc")
    out.put("keepInHeap", keepInHeap); out.put("queriesPerWave", queriesPerWave)
    out.put("puts", puts); out.put("bytes", bytes); out.put("sendSeconds", sendMs / 1000.0)
    out.put("putsPerSecond", puts / (sendMs / 1000.0)); out.put("mbPerSecond", bytes / 1e6 / (sendMs / 1000.0))
    out.put("p50Ms", pct(0.50)); out.put("p99Ms", pct(0.99)); out.put("maxMs", pct(1.0))
    out.put("driverCpuCores", driverCpuNs / 1e6 / sendMs)
    out.put("endpointThreadCpuSeconds", endpointNs / 1e9)
    // What one core running only the endpoint would carry.
    out.put("putsPerEndpointCpuSecond", if (endpointNs == 0) 0 else puts / (endpointNs / 1e9))
    out.put("mbPerEndpointCpuSecond", if (endpointNs == 0) 0 else bytes / 1e6 / (endpointNs / 1e9))
    // Every driver thread (Netty, Spark's RPC, the endpoint, GC; through the RPC no sender runs there).
    out.put("putsPerDriverCpuSecond", if (driverCpuNs == 0) 0 else puts / (driverCpuNs / 1e9))
    // The JIT still compiles in the first seconds of a row: what the driver needs once it is done.
    val jitNs = cpuByThreadKind.collect { case (k, ns) if k.contains("CompilerThre") => ns }.sum
    out.put("putsPerDriverCpuSecondWithoutJit",
      if (driverCpuNs - jitNs <= 0) 0 else puts / ((driverCpuNs - jitNs) / 1e9))
    val topKinds = new java.util.LinkedHashMap[String, Double]()
    cpuByThreadKind.toSeq.sortBy(-_._2).take(6).foreach { case (k, ns) => topKinds.put(k, ns / 1e9) }
    out.put("driverCpuSecondsByThread", topKinds)
    out.put("commitP50Ms", if (sortedCommits.isEmpty) 0 else sortedCommits(sortedCommits.size / 2))
    out.put("commitMaxMs", if (sortedCommits.isEmpty) 0 else sortedCommits.last)
    out.put("packMbMean", if (packBytes.isEmpty) 0 else packBytes.sum / 1e6 / packBytes.size)
    out.put("heldBytes", heldBytes)
    out.put("heapPerHeldByte", if (heldBytes == 0) 0 else (heapUsed - heapAfterRelease).toDouble / heldBytes)
    new ObjectMapper().writeValueAsString(out)
  }

  /**
   * CPU ticks (1/100 s) of every thread of this process, the JVM's own (GC, JIT) included, by
   * thread id, with its name as the OS knows it (15 characters); empty off Linux.
   */
  private def nativeThreadTicks(): Map[String, (String, Long)] = {
    val tasks = Option(new File("/proc/self/task").listFiles()).getOrElse(Array.empty[File])
    tasks.flatMap { t =>
      try {
        val stat = new String(Files.readAllBytes(new File(t, "stat").toPath), UTF_8)
        // "tid (name) state ... utime stime": the name may hold spaces, the fields after ")" do not.
        val name = stat.substring(stat.indexOf('(') + 1, stat.lastIndexOf(')'))
        val fields = stat.substring(stat.lastIndexOf(')') + 2).split(' ')
        Some(t.getName -> (name, fields(11).toLong + fields(12).toLong))
      } catch {
        case _: java.io.IOException => None // the thread ended meanwhile
      }
    }.toMap
  }

  /** CPU time of every live thread of this JVM, by id, with the thread's name. */
  private def threadCpuTimes(): Map[Long, (String, Long)] = {
    val mx = ManagementFactory.getThreadMXBean
    mx.getAllThreadIds.toSeq.flatMap { id =>
      Option(mx.getThreadInfo(id)).map(info => id -> (info.getThreadName,
        mx.getThreadCpuTime(id)))
    }.filter(_._2._2 >= 0).toMap
  }

  /** One executor's share of a round: its senders put their items, each timing every put. */
  private def send(roots: Seq[String], partitions: Int, stores: Int, round: Int, executor: Int,
      executors: Int, senders: Int, keepInHeap: Boolean, ask: CoordinatorRequest => CoordinatorReply): Seq[Sent] = {
    val items = for {
      (root, q) <- roots.zipWithIndex; p <- 0 until partitions; s <- 0 until stores
    } yield (root, q, p, s)
    val mine = items.zipWithIndex.collect { case (item, i) if i % executors == executor => item }
    val random = new Random(round * 7919L + executor)
    // A few hundred distinct arrays: their content does not matter, allocating 40k would.
    val payloads = Array.fill(512) {
      val size = (MinSize * math.pow(MaxSize.toDouble / MinSize, random.nextDouble())).toInt
      val b = new Array[Byte](size)
      random.nextBytes(b)
      b
    }
    val pool = Executors.newFixedThreadPool(senders)
    try {
      val futures = (0 until senders).map { t =>
        pool.submit(new Callable[Sent] {
          override def call(): Sent = {
            val share = mine.zipWithIndex.collect { case (item, i) if i % senders == t => item }
            val lat = new Array[Long](share.size)
            var bytes = 0L
            val start = System.currentTimeMillis()
            share.zipWithIndex.foreach { case ((root, q, p, s), i) =>
              val payload = payloads((q * 31 + p * 7 + s + round) % payloads.length)
              // The same files every round: each pack supersedes the last, which is deleted.
              val rel = if (stores == 1) s"state/0/$p/1.heap-delta" else s"state/0/$p/store$s/1.heap-delta"
              val t0 = System.nanoTime()
              val reply = ask(PutInline(root, rel, payload, "W5 benchmark storage",
                persistent = true, keepInHeap = keepInHeap))
              lat(i) = System.nanoTime() - t0
              if (reply != Done) throw new IllegalStateException(s"put answered $reply")
              bytes += payload.length
            }
            Sent(lat, bytes, start, System.currentTimeMillis())
          }
        })
      }
      futures.map(_.get())
    } finally pool.shutdown()
  }
}
