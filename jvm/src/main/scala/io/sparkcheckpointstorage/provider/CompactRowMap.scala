package io.sparkcheckpointstorage.provider

import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.unsafe.Platform
import org.apache.spark.unsafe.array.ByteArrayMethods
import org.apache.spark.unsafe.hash.Murmur3_x86_32

/**
 * The working state of one store: a hash map from key bytes to value bytes, both the raw
 * bytes of `UnsafeRow`s, packed into large byte pages instead of one object pair per entry.
 *
 * Why: Spark's default provider holds a `HashMap[UnsafeRow, UnsafeRow]`, about 250 heap
 * bytes per small key; here a small aggregation key costs its bytes, an 8-byte record
 * header and about 16 bytes of index, with no per-entry objects for the GC to trace.
 *
 * Layout: each record is `[keyLen:int][valueLen:int][key][value]` in a page. The index is
 * open addressing with linear probing over two parallel arrays: the record address
 * (`page << 32 | offset`, 0 = empty slot, pages numbered from 1) and the key hash. A value
 * of the same length is overwritten in place; otherwise a new record is appended and the
 * old one becomes garbage, which [[compactIfWasteful]] reclaims.
 *
 * Not thread-safe: the provider serialises access.
 */
final class CompactRowMap(
    val keyNumFields: Int,
    val valueNumFields: Int,
    expectedSize: Int = 0,
    initialSeed: Int = CompactRowMap.randomSeed()) {
  import CompactRowMap._

  private var seed = initialSeed

  private var pages = new Array[Array[Byte]](8) // index 0 unused: address 0 means empty
  private var lastPage = 0
  private var lastPageUsed = 0
  private var nextPageSize = MinPageSize

  private var addrs = new Array[Long](slotsFor(expectedSize))
  private var hashes = new Array[Int](addrs.length)
  private var mask = addrs.length - 1
  private var count = 0

  private var liveRecordBytes = 0L
  private var allRecordBytes = 0L
  private var pageBytes = 0L

  def size: Int = count

  /** The hash seed and slot count: what a state file written in this map's order records. */
  def layout: Layout = Layout(seed, addrs.length)

  /**
   * Readies the map for entries that arrive in the slot order of a map with `layout`, as a
   * state file's records or a batch's changes do.
   *
   * An empty map takes that seed and at least that many slots: the entries then land in
   * ascending slots, mostly where they sat in the writer, one pass over the index instead
   * of a cache miss or two per key (750k keys: 120 -> 52 ns a key).
   *
   * A filled map with the same seed first grows to at least that many slots. Entries of a
   * same-seed map in slot order, poured into a smaller index, pile up into long probe
   * clusters. A map with another seed needs nothing: to it the order is random.
   */
  def prepareFor(layout: Layout): Unit = {
    require(Layout.isValidSlots(layout.slots), s"invalid slot count ${layout.slots}")
    if (count == 0) {
      seed = layout.seed
      if (addrs.length < layout.slots) resize(layout.slots)
    } else if (layout.seed == seed && addrs.length < layout.slots) {
      resize(layout.slots)
    }
  }

  /**
   * The summed distance of every entry from its home slot: how much probing lookups do
   * (for tests).
   */
  private[provider] def totalProbeDistance: Long = {
    var total = 0L
    var s = 0
    while (s <= mask) {
      if (addrs(s) != 0L) total += (s - (hashes(s) & mask)) & mask
      s += 1
    }
    total
  }

  /** Heap bytes of each page array, its header included (for tests). */
  private[provider] def pageArrayBytes: Seq[Long] =
    (1 to lastPage).map(i => pages(i).length.toLong + ArrayHeaderBytes)

  /** Heap bytes held: pages and index arrays. */
  def memoryBytes: Long = pageBytes + addrs.length.toLong * 12L + pages.length * 8L + 64L

  /** The value of `key`, null if absent, [[CompactRowMap.Removed]] if recorded as removed. */
  def get(key: UnsafeRow): UnsafeRow = {
    val slot = find(key.getBaseObject, key.getBaseOffset, key.getSizeInBytes, hashOf(key))
    if (slot < 0) null else valueAt(addrs(slot))
  }

  /**
   * The address of `key`'s current record, 0 if absent. Its key bytes, read back with
   * [[keyAtAddress]], stay valid until [[clear]] or [[compactIfWasteful]], even once the
   * key's value moves to a newer record.
   */
  def recordAddress(key: UnsafeRow): Long = {
    val slot = find(key.getBaseObject, key.getBaseOffset, key.getSizeInBytes, hashOf(key))
    if (slot < 0) 0L else addrs(slot)
  }

  /** The key of the record at `addr`, an address [[recordAddress]] gave. */
  def keyAtAddress(addr: Long): UnsafeRow = keyAt(addr)

  def contains(key: UnsafeRow): Boolean =
    find(key.getBaseObject, key.getBaseOffset, key.getSizeInBytes, hashOf(key)) >= 0

  /** Sets the value of `key`. */
  def put(key: UnsafeRow, value: UnsafeRow): Unit = upsert(key, value)

  /**
   * Records `key` as removed: [[get]] then answers [[CompactRowMap.Removed]]. Used by the
   * pending changes of a batch, never by the state itself.
   */
  def putRemoved(key: UnsafeRow): Unit = upsert(key, null)

  private def upsert(key: UnsafeRow, value: UnsafeRow): Unit = {
    val h = hashOf(key)
    upsertAt(find(key.getBaseObject, key.getBaseOffset, key.getSizeInBytes, h), h, key, value)
  }

  /** [[upsert]] with the key's hash and slot (-1: absent) already found. */
  private def upsertAt(slot: Int, h: Int, key: UnsafeRow, value: UnsafeRow): Unit = {
    val valueLen = if (value == null) RemovedLength else value.getSizeInBytes
    if (slot >= 0) {
      val addr = addrs(slot)
      val page = pages(pageOf(addr))
      val at = Platform.BYTE_ARRAY_OFFSET + offsetOf(addr)
      val oldValueLen = Platform.getInt(page, at + 4)
      if (oldValueLen == valueLen) {
        if (value != null) {
          Platform.copyMemory(value.getBaseObject, value.getBaseOffset, page,
            at + 8 + Platform.getInt(page, at), valueLen)
        }
      } else {
        liveRecordBytes -= recordLength(addr)
        addrs(slot) = append(key, value)
      }
    } else {
      if ((count + 1) * 4L > (mask + 1) * 3L) grow()
      insertNew(append(key, value), h)
      count += 1
    }
  }

  def remove(key: UnsafeRow): Boolean = {
    val slot = find(key.getBaseObject, key.getBaseOffset, key.getSizeInBytes, hashOf(key))
    if (slot < 0) return false
    liveRecordBytes -= recordLength(addrs(slot))
    deleteSlot(slot)
    count -= 1
    true
  }

  def clear(): Unit = {
    pages = new Array[Array[Byte]](8)
    lastPage = 0
    lastPageUsed = 0
    nextPageSize = MinPageSize
    addrs = new Array[Long](InitialSlots)
    hashes = new Array[Int](InitialSlots)
    mask = InitialSlots - 1
    count = 0
    liveRecordBytes = 0
    allRecordBytes = 0
    pageBytes = 0
  }

  /**
   * Iterates the entries. Each call of `next` gives fresh key and value rows that point into
   * the pages (no copy); they stay valid until the map is next modified.
   */
  def iterator: Iterator[(UnsafeRow, UnsafeRow)] = new Iterator[(UnsafeRow, UnsafeRow)] {
    private var slot = nextSlot(0)
    private def nextSlot(from: Int): Int = {
      var s = from
      while (s <= mask && addrs(s) == 0L) s += 1
      s
    }
    override def hasNext: Boolean = slot <= mask
    override def next(): (UnsafeRow, UnsafeRow) = {
      if (!hasNext) throw new NoSuchElementException
      val addr = addrs(slot)
      slot = nextSlot(slot + 1)
      (keyAt(addr), valueAt(addr))
    }
  }

  /** Rewrites the live records into fresh pages when garbage outweighs live data. */
  def compactIfWasteful(): Unit = {
    val garbage = allRecordBytes - liveRecordBytes
    if (garbage > MinGarbageToCompact && garbage > liveRecordBytes) compact()
  }

  private def compact(): Unit = {
    val oldPages = pages
    pages = new Array[Array[Byte]](8)
    lastPage = 0
    lastPageUsed = 0
    nextPageSize = MinPageSize
    pageBytes = 0
    allRecordBytes = 0
    var s = 0
    while (s <= mask) {
      val addr = addrs(s)
      if (addr != 0L) {
        val page = oldPages(pageOf(addr))
        val off = offsetOf(addr)
        val len = 8 + Platform.getInt(page, Platform.BYTE_ARRAY_OFFSET + off) +
          math.max(Platform.getInt(page, Platform.BYTE_ARRAY_OFFSET + off + 4), 0)
        val newAddr = reserve(len)
        Platform.copyMemory(page, Platform.BYTE_ARRAY_OFFSET + off,
          pages(pageOf(newAddr)), Platform.BYTE_ARRAY_OFFSET + offsetOf(newAddr), len)
        addrs(s) = newAddr
      }
      s += 1
    }
    liveRecordBytes = allRecordBytes
  }

  private def hashOf(row: UnsafeRow): Int =
    Murmur3_x86_32.hashUnsafeBytes(row.getBaseObject, row.getBaseOffset, row.getSizeInBytes, seed)

  private def find(base: AnyRef, offset: Long, len: Int, h: Int): Int = {
    var s = h & mask
    while (true) {
      val addr = addrs(s)
      if (addr == 0L) return -1
      if (hashes(s) == h) {
        val page = pages(pageOf(addr))
        val off = offsetOf(addr)
        if (Platform.getInt(page, Platform.BYTE_ARRAY_OFFSET + off) == len &&
          ByteArrayMethods.arrayEquals(page, Platform.BYTE_ARRAY_OFFSET + off + 8, base, offset, len)) {
          return s
        }
      }
      s = (s + 1) & mask
    }
    -1
  }

  private def insertNew(addr: Long, h: Int): Unit = {
    var s = h & mask
    while (addrs(s) != 0L) s = (s + 1) & mask
    addrs(s) = addr
    hashes(s) = h
  }

  /** Backward-shift deletion keeps linear probing correct without tombstones. */
  private def deleteSlot(slot: Int): Unit = {
    var hole = slot
    var s = (slot + 1) & mask
    while (addrs(s) != 0L) {
      val home = hashes(s) & mask
      // Move s into the hole when its home is not cyclically within (hole, s].
      val shouldMove = if (hole <= s) home <= hole || home > s else home <= hole && home > s
      if (shouldMove) {
        addrs(hole) = addrs(s)
        hashes(hole) = hashes(s)
        hole = s
      }
      s = (s + 1) & mask
    }
    addrs(hole) = 0L
    hashes(hole) = 0
  }

  private def grow(): Unit = resize(addrs.length * 2)

  private def resize(n: Int): Unit = {
    val oldAddrs = addrs
    val oldHashes = hashes
    addrs = new Array[Long](n)
    hashes = new Array[Int](n)
    mask = n - 1
    var i = 0
    while (i < oldAddrs.length) {
      if (oldAddrs(i) != 0L) insertNew(oldAddrs(i), oldHashes(i))
      i += 1
    }
  }

  private def append(key: UnsafeRow, value: UnsafeRow): Long = {
    val keyLen = key.getSizeInBytes
    val valueLen = if (value == null) 0 else value.getSizeInBytes
    val len = 8 + keyLen + valueLen
    val addr = reserve(len)
    val page = pages(pageOf(addr))
    val at = Platform.BYTE_ARRAY_OFFSET + offsetOf(addr)
    Platform.putInt(page, at, keyLen)
    Platform.putInt(page, at + 4, if (value == null) RemovedLength else valueLen)
    Platform.copyMemory(key.getBaseObject, key.getBaseOffset, page, at + 8, keyLen)
    if (value != null) {
      Platform.copyMemory(value.getBaseObject, value.getBaseOffset, page, at + 8 + keyLen, valueLen)
    }
    liveRecordBytes += len
    addr
  }

  private def reserve(len: Int): Long = {
    if (lastPage == 0 || lastPageUsed + len > pages(lastPage).length) {
      // A page and its array header fill a power of two exactly: with G1's 1 MiB regions
      // (heaps under 2 GiB) a full page is one humongous region with nothing left over; a
      // 1 MiB array plus its header would take two regions, doubling the heap per key.
      val size = math.max(len, nextPageSize - ArrayHeaderBytes)
      nextPageSize = math.min(nextPageSize * 2, MaxPageSize)
      lastPage += 1
      if (lastPage >= pages.length) pages = java.util.Arrays.copyOf(pages, pages.length * 2)
      pages(lastPage) = new Array[Byte](size)
      pageBytes += size + ArrayHeaderBytes
      lastPageUsed = 0
    }
    val addr = (lastPage.toLong << 32) | lastPageUsed.toLong
    lastPageUsed += len
    allRecordBytes += len
    addr
  }

  private def recordLength(addr: Long): Int = {
    val page = pages(pageOf(addr))
    val at = Platform.BYTE_ARRAY_OFFSET + offsetOf(addr)
    8 + Platform.getInt(page, at) + math.max(Platform.getInt(page, at + 4), 0)
  }

  private def keyAt(addr: Long): UnsafeRow = {
    val page = pages(pageOf(addr))
    val at = Platform.BYTE_ARRAY_OFFSET + offsetOf(addr)
    val row = new UnsafeRow(keyNumFields)
    row.pointTo(page, at + 8, Platform.getInt(page, at))
    row
  }

  private def valueAt(addr: Long): UnsafeRow = {
    val page = pages(pageOf(addr))
    val at = Platform.BYTE_ARRAY_OFFSET + offsetOf(addr)
    val keyLen = Platform.getInt(page, at)
    val valueLen = Platform.getInt(page, at + 4)
    if (valueLen == RemovedLength) return Removed
    val row = new UnsafeRow(valueNumFields)
    row.pointTo(page, at + 8 + keyLen, valueLen)
    row
  }
}

object CompactRowMap {
  /**
   * How a map's index is laid out: its hash seed and slot count (a power of two). A state
   * file records its writer's, so a map filled from it can follow [[CompactRowMap#prepareFor]].
   */
  final case class Layout(seed: Int, slots: Int)

  object Layout {
    def isValidSlots(slots: Int): Boolean =
      slots >= InitialSlots && slots <= MaxSlots && Integer.bitCount(slots) == 1
  }

  /** The value of a key recorded with [[CompactRowMap#putRemoved]]; compare with `eq`. */
  val Removed: UnsafeRow = new UnsafeRow(0)
  private val RemovedLength = -1

  private val InitialSlots = 16

  /**
   * Maps hash with different seeds unless told otherwise. A map filled in the iteration
   * order of a same-seed map with more slots (a state file replayed on load, a batch's
   * changes applied) receives its keys sorted by home slot, and linear probing then piles
   * them into long clusters, which makes a load several times slower than in random order.
   * [[CompactRowMap#prepareFor]] is how a map shares a seed safely.
   */
  def randomSeed(): Int = java.util.concurrent.ThreadLocalRandom.current().nextInt()

  /**
   * The seed of a batch's changes map, whose iteration order is the record order of the
   * batch's delta file: fixed, so the same batch always writes the same bytes (a delta's
   * size is checked against the storages' limits, and reruns must be comparable). Only
   * user puts, in input order, fill such a map; a live map that starts from a batch's
   * changes or a delta takes this seed too, through [[CompactRowMap#prepareFor]].
   */
  val ChangesSeed: Int = 0x5EEDDE17

  /** Slots for `n` keys within the 3/4 load limit, so filling them never rehashes. */
  private def slotsFor(n: Int): Int = {
    val needed = math.max(InitialSlots.toLong, n.toLong * 4 / 3 + 1)
    java.lang.Long.highestOneBit(math.min(needed * 2 - 1, MaxSlots.toLong)).toInt
  }
  private val MaxSlots = 1 << 30
  private val MinPageSize = 4 * 1024
  private val MaxPageSize = 1024 * 1024
  private val ArrayHeaderBytes = Platform.BYTE_ARRAY_OFFSET
  private val MinGarbageToCompact = 256L * 1024

  @inline private def pageOf(addr: Long): Int = (addr >>> 32).toInt
  @inline private def offsetOf(addr: Long): Int = (addr & 0xFFFFFFFFL).toInt
}
