package io.sparkcheckpointstorage.coordinator

import java.io.IOException

/** A coordinator message that cannot be decoded: refused, never half-read. */
class MalformedMessageException(message: String) extends IOException(message)
