package io.sparkcheckpointstorage.provider

import scala.collection.mutable
import scala.util.Random

import org.scalatest.funsuite.AnyFunSuite

import io.sparkcheckpointstorage.provider.StateRows._

class CompactRowMapSuite extends AnyFunSuite {
  private def contents(m: CompactRowMap): Map[(String, Int), Long] =
    m.iterator.map { case (k, v) => keyOf(k) -> valueOf(v) }.toMap

  test("random puts and removes agree with a HashMap, through growth, deletes and compaction") {
    val rnd = new Random(42)
    val m = new CompactRowMap(keySchema.length, valueSchema.length)
    val expected = mutable.HashMap[(String, Int), Long]()
    for (i <- 0 until 200000) {
      // Names of varying length make values of the same key change size only via the key,
      // while the value is fixed-width: exercise both in-place and appended records.
      val k = ("k" * (1 + rnd.nextInt(3)), rnd.nextInt(5000))
      rnd.nextInt(10) match {
        case 0 | 1 | 2 =>
          assert(m.remove(key(k._1, k._2)) == expected.remove(k).isDefined)
        case _ =>
          val v = rnd.nextLong()
          m.put(key(k._1, k._2), value(v))
          expected(k) = v
      }
      if (i % 50000 == 0) m.compactIfWasteful()
    }
    assert(m.size == expected.size)
    assert(contents(m) == expected.toMap)
    expected.keys.take(1000).foreach { k => assert(valueOf(m.get(key(k._1, k._2))) == expected(k)) }
    assert(m.get(key("absent", 1)) == null)
  }

  private type Entry = (org.apache.spark.sql.catalyst.expressions.UnsafeRow,
    org.apache.spark.sql.catalyst.expressions.UnsafeRow)

  /**
   * A map with its own seed that held `peak` random keys and keeps `n` of them (an index
   * never shrinks: a state that shrank keeps its slots), and its entries in slot order.
   */
  private def filledMap(n: Int, peak: Int): (CompactRowMap, Seq[Entry]) = {
    val rnd = new Random(3)
    val m = new CompactRowMap(keySchema.length, valueSchema.length)
    val keys = (0 until peak).map(i => key("k" + rnd.nextInt(), i))
    keys.zipWithIndex.foreach { case (k, i) => m.put(k, value(i)) }
    keys.drop(n).foreach(m.remove)
    (m, m.iterator.map { case (k, v) => (k.copy(), v.copy()) }.toSeq)
  }

  test("an empty map prepared for another's layout takes that map's entries in slot order at its probe lengths") {
    val (source, entries) = filledMap(n = 30000, peak = 400000)
    val m = new CompactRowMap(keySchema.length, valueSchema.length)
    m.prepareFor(source.layout)
    assert(m.layout == source.layout)
    entries.foreach { case (k, v) => m.put(k, v) }
    assert(contents(m) == contents(source))
    assert(m.layout == source.layout)
    assert(m.totalProbeDistance <= source.totalProbeDistance + 100)
    // What the preparing prevents: the same entries in the same order, into a same-seed
    // map sized for them alone, pile up into long probe clusters.
    val unprepared = new CompactRowMap(keySchema.length, valueSchema.length, initialSeed = source.layout.seed)
    entries.foreach { case (k, v) => unprepared.put(k, v) }
    assert(contents(unprepared) == contents(source))
    assert(unprepared.totalProbeDistance > 10 * (source.totalProbeDistance + 100),
      s"${unprepared.totalProbeDistance} vs ${source.totalProbeDistance}")
  }

  test("a filled map prepared for a same-seed layout grows to it first; another seed leaves it as it is") {
    val (source, entries) = filledMap(n = 30000, peak = 400000)
    val sameSeed = new CompactRowMap(keySchema.length, valueSchema.length, initialSeed = source.layout.seed)
    sameSeed.put(key("first", 1), value(1))
    sameSeed.prepareFor(source.layout)
    assert(sameSeed.layout == source.layout)
    entries.foreach { case (k, v) => sameSeed.put(k, v) }
    assert(sameSeed.size == 30001 && valueOf(sameSeed.get(key("first", 1))) == 1)
    assert(sameSeed.totalProbeDistance <= source.totalProbeDistance + 100)

    val otherSeed = new CompactRowMap(keySchema.length, valueSchema.length, initialSeed = source.layout.seed + 1)
    otherSeed.put(key("first", 1), value(1))
    val before = otherSeed.layout
    otherSeed.prepareFor(source.layout)
    assert(otherSeed.layout == before)
    entries.foreach { case (k, v) => otherSeed.put(k, v) }
    assert(contents(otherSeed) == contents(source) + (("first", 1) -> 1L))
  }

  test("compaction reclaims the records left behind by removes") {
    val m = new CompactRowMap(keySchema.length, valueSchema.length)
    (0 until 100000).foreach(i => m.put(key("key", i), value(i)))
    val full = m.memoryBytes
    (0 until 99000).foreach(i => m.remove(key("key", i)))
    m.compactIfWasteful()
    assert(m.memoryBytes < full / 2, s"${m.memoryBytes} vs $full")
    assert(contents(m) == (99000 until 100000).map(i => ("key", i) -> i.toLong).toMap)
  }

  test("small keys cost well under 80 heap bytes each") {
    val m = new CompactRowMap(keySchema.length, valueSchema.length)
    (0 until 1000000).foreach(i => m.put(key("", i), value(i)))
    val perKey = m.memoryBytes.toDouble / m.size
    assert(perKey < 80, s"$perKey bytes per key")
  }

  test("pages with their array headers are powers of two, so G1 regions hold them whole") {
    val m = new CompactRowMap(keySchema.length, valueSchema.length)
    (0 until 200000).foreach(i => m.put(key("", i), value(i)))
    val pages = m.pageArrayBytes
    assert(pages.count(_ == 1024 * 1024) >= 5, pages)
    pages.foreach(b => assert(java.lang.Long.bitCount(b) == 1, s"page of $b bytes in $pages"))
  }
}
