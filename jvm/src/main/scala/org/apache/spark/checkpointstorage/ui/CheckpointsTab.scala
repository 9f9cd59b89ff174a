package org.apache.spark.checkpointstorage.ui

import scala.jdk.CollectionConverters._
import scala.xml.Node

import org.json4s.JValue
import org.json4s.jackson.JsonMethods

import org.apache.spark.sql.checkpointstorage.shim.ServletShim
import org.apache.spark.ui.{SparkUI, SparkUITab, UIUtils, WebUIPage}
import org.apache.spark.util.Utils

import io.sparkcheckpointstorage.monitoring.{CheckpointBatchRow, CheckpointsStatusListener, QueryCheckpoints, Stat}
import io.sparkcheckpointstorage.results.ResultCodec

/**
 * The "Checkpoints" tab (Flink's checkpoints tab): an overview of every streaming query's
 * checkpoints, and per query its history, summary and storage configuration. Each page has a
 * JSON twin at `<page>/json`. It reads Spark's status store, where [[CheckpointsStatusListener]]
 * keeps what was computed off the batches' path, and in a live driver the inline bytes its
 * coordinator holds now (`liveDriverHeld`: held bytes and their bound; None in the History
 * Server, which shows the last batch's view of them).
 */
class CheckpointsTab(val ui: SparkUI, val liveDriverHeld: Option[() => (Long, Long)])
    extends SparkUITab(ui, "checkpoints") {
  override val name: String = "Checkpoints"

  attachPage(new CheckpointsPage(this))
  attachPage(new CheckpointsQueryPage(this))

  def queries: Seq[QueryCheckpoints] =
    ui.store.store.view(classOf[QueryCheckpoints]).asScala.toSeq.sortBy(q => (-q.startedAtMs, q.queryId))

  def query(id: String): Option[QueryCheckpoints] =
    try Some(ui.store.store.read(classOf[QueryCheckpoints], id)) catch { case _: NoSuchElementException => None }
}

private[ui] object CheckpointsPages {
  def json(value: AnyRef): JValue = JsonMethods.parse(ResultCodec.valueJson(value))

  val TableClass = "table table-bordered table-sm table-striped"

  def time(ms: Long): String = if (ms < 0) "-" else UIUtils.formatDate(ms)
  def duration(ms: Long): String = if (ms < 0) "-" else UIUtils.formatDuration(ms)
  def bytes(n: Long): Node = if (n < 0) <span>-</span> else <span title={s"$n bytes"}>{Utils.bytesToString(n)}</span>

  /** Why a query has no entry of ours. */
  val NoEntryReason: String = "its checkpoint does not go through this package's checkpoint file manager " +
    "(spark.sql.streaming.checkpointFileManagerClass is not " +
    "io.sparkcheckpointstorage.filemanager.StorageCheckpointFileManager when it started), so no checkpoint " +
    "facts of it are known"

  def queryName(q: QueryCheckpoints): String = if (q.name.nonEmpty) q.name else "(unnamed)"

  def driverHeld(tab: CheckpointsTab, queries: Seq[QueryCheckpoints]): (Long, Long) = tab.liveDriverHeld match {
    case Some(held) => held()
    case None =>
      // The History Server: the last batch's view of the driver.
      queries.filter(_.latest.isDefined).sortBy(_.latest.get.committedAtMs).lastOption
        .map(q => (q.driverInlineBytesHeld, q.driverMaxTotalInlineSize)).getOrElse((-1L, -1L))
  }

  def isDriverStorage(q: QueryCheckpoints): Boolean = q.storage.startsWith("DriverCheckpointStorage")

  def overviewJson(q: QueryCheckpoints): java.util.Map[String, Any] = {
    val m = new java.util.LinkedHashMap[String, Any]()
    m.put("queryId", q.queryId); m.put("name", q.name); m.put("runId", q.runId); m.put("status", q.status)
    m.put("exception", q.exception); m.put("checkpoint", q.checkpoint); m.put("storage", q.storage)
    m.put("provider", q.provider); m.put("statePartitions", q.statePartitions)
    m.put("batchesCommitted", q.batchesCommitted)
    m.put("restoredBatchId", q.restoredBatchId); m.put("restoredBatchCommittedAtMs", q.restoredBatchCommittedAtMs)
    m.put("restoredAtMs", q.restoredAtMs)
    m.put("latestBatch", q.latest.orNull)
    m.put("savepointBatchId", q.savepointBatchId); m.put("savepointPath", q.savepointPath)
    m.put("savepointAtMs", q.savepointAtMs)
    m.put("failures", q.failures); m.put("recentFailures", q.recentFailures)
    m
  }

  def statRow(label: String, s: Option[Stat], show: Long => Node): Node =
    <tr><td>{label}</td>{s match {
      case Some(v) => Seq(<td>{show(v.min)}</td>, <td>{show(v.avg)}</td>, <td>{show(v.max)}</td>)
      case None => Seq(<td>-</td>, <td>-</td>, <td>-</td>)
    }}</tr>
}

/** The overview of every query: `/checkpoints/` and `/checkpoints/json`. */
private[ui] class CheckpointsPage(parent: CheckpointsTab) extends WebUIPage("") {
  import CheckpointsPages._

  override def renderJson(request: ServletShim.Request): JValue = {
    val queries = parent.queries
    val out = new java.util.LinkedHashMap[String, Any]()
    out.put("queries", queries.filter(_.ours).map(overviewJson).asJava)
    out.put("withoutEntry", queries.filterNot(_.ours).map { q =>
      Map("queryId" -> q.queryId, "name" -> q.name, "runId" -> q.runId, "reason" -> NoEntryReason).asJava
    }.asJava)
    val (held, bound) = driverHeld(parent, queries)
    out.put("driver", Map("inlineBytesHeld" -> held, "maxTotalInlineSize" -> bound).asJava)
    json(out)
  }

  override def render(request: ServletShim.Request): Seq[Node] = {
    val queries = parent.queries
    val ours = queries.filter(_.ours)
    val (held, bound) = driverHeld(parent, queries)
    val driver = if (!ours.exists(isDriverStorage)) Nil else {
      <h4>Driver storage</h4>
      <p id="driver-storage">Inline state bytes held in driver heap: {bytes(held)} of {bytes(bound)}
        (spark.sql.streaming.checkpointStorage.driver.maxTotalInlineSize){
        if (bound > 0) f" — ${held * 100.0 / bound}%.1f%%" else ""}</p>
    }
    val table = if (ours.isEmpty) <p>No streaming query has checkpointed through this package yet.</p> else
      <table class={TableClass} id="checkpoints-queries">
        <thead><tr><th>Name</th><th>Id</th><th>Run id</th><th>Status</th><th>Storage</th><th>Provider</th>
          <th>State partitions</th><th>Batches committed</th><th>Restored from</th><th>Latest batch</th>
          <th>Latest savepoint</th><th>Commit failures</th></tr></thead>
        <tbody>{ours.map(row(request, _))}</tbody>
      </table>
    val without = queries.filterNot(_.ours)
    val noEntry = if (without.isEmpty) Nil else
      <h4>Queries without an entry</h4>
      <ul id="checkpoints-without-entry">{without.map { q =>
        <li>Query {queryName(q)} ({q.queryId}) has no entry: {NoEntryReason}.</li>
      }}</ul>
    val content = driver ++ <h4>Streaming queries</h4> ++ table ++ noEntry
    UIUtils.headerSparkPage(request, "Checkpoints", content, parent)
  }

  private def row(request: ServletShim.Request, q: QueryCheckpoints): Node = {
    val link = UIUtils.prependBaseUri(request, parent.basePath) + s"/${parent.prefix}/query/?id=${q.queryId}"
    <tr>
      <td><a href={link}>{queryName(q)}</a></td>
      <td>{q.queryId}</td>
      <td>{q.runId}</td>
      <td>{q.status}{if (q.exception.nonEmpty) <div title={q.exception}>{q.exception.linesIterator.take(1).mkString}</div> else Nil}</td>
      <td>{q.storage}</td>
      <td>{q.provider.split('.').lastOption.getOrElse("")}</td>
      <td>{if (q.statePartitions < 0) "-" else q.statePartitions.toString}</td>
      <td>{q.batchesCommitted}</td>
      <td>{if (q.restoredBatchId < 0) "-" else s"batch ${q.restoredBatchId} (committed ${time(q.restoredBatchCommittedAtMs)}), at ${time(q.restoredAtMs)}"}</td>
      <td>{q.latest.map(b => <span>batch {b.batchId} at {time(b.committedAtMs)}, {bytes(b.inlineBytes + b.fileBytes)}</span>).getOrElse(<span>-</span>)}</td>
      <td>{if (q.savepointBatchId < 0) "-" else s"batch ${q.savepointBatchId} at ${time(q.savepointAtMs)}: ${q.savepointPath}"}</td>
      <td>{q.failures}</td>
    </tr>
  }
}

/** One query: `/checkpoints/query/?id=<query id>` and `/checkpoints/query/json?id=<query id>`. */
private[ui] class CheckpointsQueryPage(parent: CheckpointsTab) extends WebUIPage("query") {
  import CheckpointsPages._

  private def queryOf(request: ServletShim.Request): Either[String, QueryCheckpoints] =
    Option(request.getParameter("id")).map(_.trim).filter(_.nonEmpty) match {
      case None => Left("Missing id parameter: the query's id")
      case Some(id) => parent.query(id).toRight(s"No streaming query with id $id is known to the checkpoints tab")
    }

  override def renderJson(request: ServletShim.Request): JValue = queryOf(request) match {
    case Left(error) => json(Map("error" -> error).asJava)
    case Right(q) =>
      val out = overviewJson(q)
      out.put("ours", q.ours)
      out.put("history", q.history.asJava)
      out.put("summary", q.summary)
      out.put("settings", q.settings.asJava)
      out.put("driverInlineBytesHeld", q.driverInlineBytesHeld)
      out.put("driverMaxTotalInlineSize", q.driverMaxTotalInlineSize)
      json(out)
  }

  override def render(request: ServletShim.Request): Seq[Node] = queryOf(request) match {
    case Left(error) => UIUtils.headerSparkPage(request, "Checkpoints", <p>{error}</p>, parent)
    case Right(q) if !q.ours =>
      UIUtils.headerSparkPage(request, s"Checkpoints of query ${queryName(q)}",
        <p>Query {queryName(q)} ({q.queryId}) has no entry: {NoEntryReason}.</p>, parent)
    case Right(q) =>
      val overview =
        <ul class="list-unstyled" id="checkpoints-overview">
          <li><strong>Id:</strong> {q.queryId}</li>
          <li><strong>Run id:</strong> {q.runId}</li>
          <li><strong>Status:</strong> {q.status}{if (q.exception.nonEmpty) s": ${q.exception.linesIterator.take(1).mkString}" else ""}</li>
          <li><strong>Checkpoint:</strong> {q.checkpoint}</li>
          <li><strong>Storage:</strong> {q.storage}</li>
          <li><strong>Provider:</strong> {q.provider}</li>
          <li><strong>State partitions:</strong> {q.statePartitions}</li>
          <li><strong>Batches committed (this driver):</strong> {q.batchesCommitted}</li>
          <li><strong>Restored from:</strong> {if (q.restoredBatchId < 0) "- (started on a new checkpoint)" else
            s"batch ${q.restoredBatchId} (committed ${time(q.restoredBatchCommittedAtMs)}), restored at ${time(q.restoredAtMs)}"}</li>
          <li><strong>Latest committed batch:</strong> {q.latest.map(b => s"${b.batchId} at ${time(b.committedAtMs)}").getOrElse("-")}</li>
          <li><strong>Latest savepoint:</strong> {if (q.savepointBatchId < 0) "-" else s"batch ${q.savepointBatchId} at ${time(q.savepointAtMs)}: ${q.savepointPath}"}</li>
          <li><strong>State commit failures:</strong> {q.failures}</li>
          {if (isDriverStorage(q) && q.driverMaxTotalInlineSize > 0)
            <li><strong>Driver inline bytes held (last batch):</strong> {bytes(q.driverInlineBytesHeld)} of {bytes(q.driverMaxTotalInlineSize)}</li>
          else Nil}
        </ul>
      val s = q.summary
      val summary =
        <table class={TableClass} id="checkpoints-summary">
          <thead><tr><th>Over the last {s.batches} batches</th><th>Minimum</th><th>Average</th><th>Maximum</th></tr></thead>
          <tbody>
            {statRow("Offsets to commit", s.offsetsToCommitMs, v => <span>{duration(v)}</span>)}
            {statRow("State bytes (inline + files)", s.stateBytes, bytes)}
            {statRow("Inline bytes", s.inlineBytes, bytes)}
            {statRow("File bytes", s.fileBytes, bytes)}
            {statRow("State files written", s.stateFiles, v => <span>{v}</span>)}
            {statRow("Pack size", s.packBytes, bytes)}
          </tbody>
        </table>
      val history =
        <table class={TableClass} id="checkpoints-history">
          <thead><tr><th>Batch</th><th>Committed at</th><th>Offsets to commit</th><th>Inline bytes</th>
            <th>File bytes</th><th>State files</th><th>Pack</th><th>Per operator</th></tr></thead>
          <tbody>{q.history.reverse.map(batchRow)}</tbody>
        </table>
      val settings =
        <table class={TableClass} id="checkpoints-settings">
          <thead><tr><th>Setting</th><th>Value</th><th>Source</th></tr></thead>
          <tbody>{q.settings.map(c => <tr><td>{c.key}</td><td>{c.value}</td><td>{c.source}</td></tr>)}</tbody>
        </table>
      val failures = if (q.recentFailures.isEmpty) Nil else
        <h4>Recent state commit failures</h4>
        <table class={TableClass} id="checkpoints-failures">
          <thead><tr><th>Batch</th><th>Time</th><th>Kind</th><th>Message</th></tr></thead>
          <tbody>{q.recentFailures.reverse.map(f =>
            <tr><td>{f.batchId}</td><td>{time(f.timeMs)}</td><td>{f.kind}</td><td>{f.message}</td></tr>)}</tbody>
        </table>
      val content = overview ++ <h4>Summary</h4> ++ summary ++
        <h4>History (the last {q.history.size} committed batches; local time)</h4> ++ history ++ failures ++
        <h4>Storage configuration</h4> ++ settings
      UIUtils.headerSparkPage(request, s"Checkpoints of query ${queryName(q)}", content, parent)
  }

  private def batchRow(b: CheckpointBatchRow): Node =
    <tr>
      <td>{b.batchId}</td>
      <td>{time(b.committedAtMs)}</td>
      <td>{duration(b.offsetsToCommitMs)}</td>
      <td>{bytes(b.inlineBytes)}</td>
      <td>{bytes(b.fileBytes)}</td>
      <td>{b.stateFiles}</td>
      <td>{if (b.packName.isEmpty) "-" else <span title={b.packName}>{bytes(b.packBytes)}</span>}</td>
      <td>{if (b.operators.isEmpty) "-" else
        <details><summary>{b.operators.size} operator{if (b.operators.size == 1) "" else "s"}</summary>
          <table class="table table-sm">
            <thead><tr><th>Operator</th><th>Files</th><th>Inline bytes</th><th>File bytes</th></tr></thead>
            <tbody>{b.operators.map(o =>
              <tr><td>{o.operator}</td><td>{o.stateFiles}</td><td>{bytes(o.inlineBytes)}</td><td>{bytes(o.fileBytes)}</td></tr>)}</tbody>
          </table>
        </details>}</td>
    </tr>
}
