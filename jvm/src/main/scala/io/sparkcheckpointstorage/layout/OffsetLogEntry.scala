package io.sparkcheckpointstorage.layout

import scala.jdk.CollectionConverters._

import io.sparkcheckpointstorage.results.ResultCodec

/**
 * Spark's offset log entry (`offsets/<batch>`): `v1`, then the batch's metadata as JSON, then
 * one line per source. Its metadata's `conf` holds the SQL settings the query keeps for life
 * (the provider, the state partitions, ...).
 */
object OffsetLogEntry {
  /** The settings the entry `content` records; None when it is not an offset log entry. */
  def conf(content: String): Option[Map[String, String]] = {
    val lines = content.split("\n", -1)
    if (lines.length < 2 || !lines(0).startsWith("v")) None
    else Some(Option(ResultCodec.readTree(lines(1)).get("conf"))
      .map(c => c.fieldNames().asScala.map(k => k -> c.get(k).asText()).toMap).getOrElse(Map.empty))
  }
}
