package io.sparkcheckpointstorage.provider

import org.scalatest.funsuite.AnyFunSuite

import io.sparkcheckpointstorage.provider.StateRows._

/** The prefix index of session windows: exact membership through adds, removes and refills. */
class PrefixIndexSuite extends AnyFunSuite {
  private def members(index: PrefixIndex, name: String): Set[(String, Int)] = {
    val keys = index.keys(prefix(name)).map(keyOf).toSeq
    assert(keys.size == keys.toSet.size, s"a key listed twice under $name: $keys")
    keys.toSet
  }

  test("keys of a prefix through adds, repeated adds and removes in any position") {
    val index = new PrefixIndex(keySchema, 1)
    (1 to 5).foreach(i => index.add(key("a", i)))
    index.add(key("a", 3))  // already there: still once
    (1 to 3).foreach(i => index.add(key("b", i)))
    assert(members(index, "a") == (1 to 5).map(("a", _)).toSet)
    index.remove(key("a", 2))  // from the middle: the last key takes its place
    index.remove(key("a", 5))  // the last one
    index.remove(key("a", 9))  // never added
    assert(members(index, "a") == Set(("a", 1), ("a", 3), ("a", 4)))
    assert(members(index, "b") == Set(("b", 1), ("b", 2), ("b", 3)))
    Seq(1, 3, 4).foreach(i => index.remove(key("a", i)))
    assert(members(index, "a").isEmpty && index.size == 3)
    index.add(key("a", 7))
    assert(members(index, "a") == Set(("a", 7)))
    assert(members(index, "c").isEmpty)
  }

  test("it matches a plain set model over many random changes, and counts its bytes") {
    val index = new PrefixIndex(keySchema, 1)
    val model = scala.collection.mutable.Set[(String, Int)]()
    val random = new scala.util.Random(7)
    val empty = index.memoryBytes
    (0 until 20000).foreach { step =>
      val k = (s"p${random.nextInt(20)}", random.nextInt(50))
      if (random.nextBoolean()) { index.add(key(k._1, k._2)); model += k }
      else { index.remove(key(k._1, k._2)); model -= k }
      if (step % 1000 == 0) index.compactIfWasteful()
    }
    (0 until 20).foreach(p => assert(members(index, s"p$p") == model.filter(_._1 == s"p$p").toSet, s"prefix p$p"))
    assert(index.size == model.size)
    assert(index.memoryBytes > empty + model.size * 16L, "each indexed key takes bytes")
    index.clear()
    assert(index.size == 0 && members(index, "p1").isEmpty)
  }
}
