package io.sparkcheckpointstorage.results

import java.lang.reflect.Modifier

import scala.jdk.CollectionConverters._

import org.scalatest.funsuite.AnyFunSuite

class ResultCodecSuite extends AnyFunSuite {
  private val store = MigratedStore("default", 3, Seq(1L, 2L))
  private val operator = MigratedOperator(0, "stateStoreSave", Seq(store))
  private val migration = MigrationManifest("file:/cp", 2, "a.Provider", "b.Provider", 2, 4, Seq(operator), 3, Some("file:/sp"))
  private val canonicalStore = CanonicalStore("default", "canonical-state/0/default", 0, 2, "{}", "{}", 3)
  private val canonical = CanonicalSavepointManifest("canonical", 1, 2, "a.Provider", 2, 3,
    Seq(CanonicalOperator(0, "stateStoreSave", Seq(canonicalStore))), 1000)
  private val savepoint = SavepointManifest(2, Some("q"), 5, 100, 1, 1000)
  private val inspectedStore = InspectedStore(0, 1, "default", 2, 1, 10, 20, 1, 3, Some(2), Some(1))
  private val pack = InspectedPack("1.pack", 0, 100, 4, 1, 3)
  private val batch = InspectedBatch(0, committed = true, Some(1), Some(2), Some(1), 2, 10, 20)

  /** One value of every result type, every optional field set. */
  private val samples: Seq[Product] = Seq(
    InspectionResult("file:/cp", Some("q"), Some("filesystem"), Some(true), Seq(0, 1), Seq(2), Some(1),
      Seq(inspectedStore), 0, Some(0), Some(1), Seq(pack), Seq(batch), Some(1), Seq("state/0/1 version 3")),
    inspectedStore, pack, batch,
    SavepointResult(savepoint, "file:/sp"),
    CanonicalSavepointResult(canonical, "file:/sp", 7, 700, 1.5), canonical.operators.head, canonicalStore,
    MigrationResult(migration, "file:/dst", 3, 30, 9, 900, 2.5), operator, store,
    MigrationProgress("writing state", 1, 2, 10, Some(0), Some("stateStoreSave"), Some("default"), Some(1), Some(2)),
    RepairResult("file:/cp", Some(7), Some(5), Seq(6, 7), 4, dryRun = false))

  private def jsonFields(value: Product): Seq[String] =
    ResultCodec.readTree(ResultCodec.toJson(value)).fieldNames().asScala.toSeq

  private def caseClassFields(cls: Class[_]): Seq[String] =
    cls.getDeclaredFields.toSeq.filterNot(f => Modifier.isStatic(f.getModifiers)).map(_.getName)

  test("every result type has a sample, and its JSON has the schema's fields in the schema's order") {
    assert(samples.map(_.getClass) == ResultCodec.Types)
    samples.foreach(s => assert(jsonFields(s) == ResultCodec.fields(s.getClass), s.getClass.getSimpleName))
  }

  test("the schema is the case classes' fields, an unwrapped manifest's fields in its place") {
    ResultCodec.Types.filterNot(t => Set("SavepointResult", "CanonicalSavepointResult", "MigrationResult")(t.getSimpleName))
      .foreach(t => assert(ResultCodec.fields(t) == caseClassFields(t), t.getSimpleName))
    assert(ResultCodec.fields(classOf[MigrationResult]) ==
      caseClassFields(classOf[MigrationManifest]) ++ caseClassFields(classOf[MigrationResult]).tail)
    assert(ResultCodec.fields(classOf[SavepointResult]) == caseClassFields(classOf[SavepointManifest]) :+ "path")
    assert(ResultCodec.schema.map(_._1) == ResultCodec.Types.map(_.getSimpleName))
    val schema = ResultCodec.readTree(ResultCodec.schemaJson())
    assert(schema.get("MigratedStore").elements().asScala.map(_.asText()).toSeq == Seq("store", "rows", "rowsPerPartition"))
  }

  test("manifests keep the fields they have on disk") {
    // Savepoints and migrated checkpoints written before the codec must read as before.
    assert(jsonFields(savepoint.copy(queryId = None)) ==
      Seq("batchId", "queryId", "files", "bytes", "inlineFiles", "createdAtMs"))
    assert(ResultCodec.toJson(savepoint.copy(queryId = None)).contains("\"queryId\":null"))
    assert(jsonFields(migration.copy(canonicalSavepoint = None)) == Seq("source", "batchId", "sourceProvider",
      "targetProvider", "numPartitions", "sourceNumPartitions", "operators", "rows"))
    assert(jsonFields(canonical) == Seq("format", "formatVersion", "batchId", "sourceProvider", "numPartitions",
      "rows", "operators", "createdAtMs"))
  }

  test("values keep their JSON types") {
    val json = ResultCodec.readTree(ResultCodec.toJson(MigrationResult(migration, "file:/dst", 3, 30, 9, 900, 2.5)))
    assert(json.get("rowsPerPartition") == null)
    assert(json.get("operators").get(0).get("stores").get(0).get("rowsPerPartition").toString == "[1,2]")
    assert(json.get("seconds").asDouble() == 2.5 && json.get("canonicalSavepoint").asText() == "file:/sp")
    val progress = ResultCodec.toJson(MigrationProgress("reading the checkpoint", 0, 1, 0, None, None, None, None, None))
    assert(progress.contains("\"operatorId\":null") && progress.contains("\"partitions\":null"))
  }
}
