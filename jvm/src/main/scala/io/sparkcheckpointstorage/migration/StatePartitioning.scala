package io.sparkcheckpointstorage.migration

import java.util.Locale

import org.apache.spark.sql.types.StructType

/**
 * Which fields of a store's state key the shuffle in front of its operator hashes: Spark
 * places the input of every stateful operator with `HashPartitioning(keys, n)` over the
 * operator's keys (`StatefulOpClusteredDistribution`), and a state row must sit in the
 * partition that the shuffle of the resumed query sends its key to. The state key starts
 * with those keys, in the shuffle's order:
 *
 *  - aggregation (`stateStoreSave`, windows included), `dedupe`, `dedupeWithinWatermark`,
 *    `flatMapGroupsWithState`, `applyInPandasWithState`: the whole key (grouping or
 *    deduplication keys);
 *  - stream-stream join (`symmetricHashJoin`): the join keys; `keyToNumValues` keys are the
 *    join keys, `keyWithIndexToValue` keys are the join keys and the value's index;
 *  - session windows: the grouping keys before the session window, which the operator
 *    records as the store's key prefix (`numColsPrefixKey`).
 *
 * A global aggregation (no key) runs in one partition: its row stays in partition 0.
 */
object StatePartitioning {
  private val WholeKey = Set("stateStoreSave", "dedupe", "dedupeWithinWatermark", "flatMapGroupsWithState",
    "applyInPandasWithState").map(_.toLowerCase(Locale.ROOT))
  private val Join = "symmetricHashJoin".toLowerCase(Locale.ROOT)
  private val SessionWindow = "sessionWindowStateStoreSaveExec".toLowerCase(Locale.ROOT)
  private val JoinIndexedStore = "-keyWithIndexToValue"

  /** The number of leading fields of `keySchema` that the operator's shuffle hashes. */
  def hashedKeyFields(op: StatefulOperator, store: OperatorStore, keySchema: StructType): Int = {
    requireRescalable(op, store)
    val name = op.name.toLowerCase(Locale.ROOT)
    if (name == Join && store.name.endsWith(JoinIndexedStore)) keySchema.length - 1
    else if (name == SessionWindow) store.numColsPrefixKey
    else keySchema.length
  }

  /** Refuses, by name, an operator whose shuffle keys cannot be told from its state. */
  def requireRescalable(op: StatefulOperator, store: OperatorStore): Unit = {
    val name = op.name.toLowerCase(Locale.ROOT)
    val known = WholeKey.contains(name) || name == Join || (name == SessionWindow && store.numColsPrefixKey > 0)
    if (!known) throw new MigrationException(s"Operator ${op.id} (${op.name}, store ${store.name}) cannot be " +
      "rescaled: which of its state key fields the query's shuffle partitions by is not known for this " +
      "operator. Rescalable: aggregation, dropDuplicates, dropDuplicatesWithinWatermark, stream-stream " +
      "joins, flatMapGroupsWithState, applyInPandasWithState, session windows. Migrate without a new " +
      "number of partitions.")
  }
}
