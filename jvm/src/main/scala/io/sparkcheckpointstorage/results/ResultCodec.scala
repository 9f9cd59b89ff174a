package io.sparkcheckpointstorage.results

import scala.jdk.CollectionConverters._

import com.fasterxml.jackson.annotation.JsonUnwrapped
import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}
import com.fasterxml.jackson.databind.node.ObjectNode
import com.fasterxml.jackson.module.scala.DefaultScalaModule

import io.sparkcheckpointstorage.formats.FileFormat

/**
 * The one way results become JSON, and the one list of their fields.
 *
 * The fields are Jackson's own view of each case class, the view it writes them by, so the
 * list cannot drift from the JSON; Python's result classes are tested against it
 * (`tests/test_jvm_names.py`).
 */
object ResultCodec {
  private val mapper: ObjectMapper = new ObjectMapper().registerModule(DefaultScalaModule)

  /** Every result type Python reads, by the name its Python class has. */
  val Types: Seq[Class[_]] = Seq(classOf[InspectionResult], classOf[InspectedStore], classOf[InspectedPack],
    classOf[InspectedBatch], classOf[SavepointResult], classOf[CanonicalSavepointResult], classOf[CanonicalOperator],
    classOf[CanonicalStore], classOf[MigrationResult], classOf[MigratedOperator], classOf[MigratedStore],
    classOf[MigrationProgress], classOf[RepairResult])

  /** A result (or a manifest) as JSON. */
  def toJson(result: Product): String = mapper.writeValueAsString(result)

  /** Any value Jackson writes (Java and Scala collections, case classes) as JSON: the Checkpoints tab's JSON pages. */
  def valueJson(value: AnyRef): String = mapper.writeValueAsString(value)

  /**
   * A manifest as the JSON of its file: its fields after the two naming its format
   * ([[FileFormat.VersionField]], [[FileFormat.MinReaderField]]), which results leave out.
   */
  def manifestJson(manifest: Product, format: FileFormat): String = {
    val file = mapper.createObjectNode()
    file.put(FileFormat.VersionField, format.current)
    file.put(FileFormat.MinReaderField, FileFormat.MinReaderVersion)
    file.setAll(mapper.valueToTree[ObjectNode](manifest))
    mapper.writeValueAsString(file)
  }

  /** JSON text as a tree: Spark's metadata and our manifests read back. */
  def readTree(json: String): JsonNode = mapper.readTree(json)

  /** The JSON field names of `cls`, in the order they are written; unwrapped parts' fields in place. */
  def fields(cls: Class[_]): Seq[String] = {
    val description = mapper.getSerializationConfig.introspect(mapper.constructType(cls))
    description.findProperties().asScala.toSeq.flatMap { p =>
      if (p.getPrimaryMember.hasAnnotation(classOf[JsonUnwrapped])) fields(p.getRawPrimaryType) else Seq(p.getName)
    }
  }

  /** Result type name -> its field names, in order. */
  def schema: Seq[(String, Seq[String])] = Types.map(t => t.getSimpleName -> fields(t))

  /** [[schema]] as a JSON object, for Python (py4j). */
  def schemaJson(): String = {
    val root = mapper.createObjectNode()
    schema.foreach { case (name, names) =>
      val array = root.putArray(name)
      names.foreach(n => array.add(n))
    }
    mapper.writeValueAsString(root)
  }
}
