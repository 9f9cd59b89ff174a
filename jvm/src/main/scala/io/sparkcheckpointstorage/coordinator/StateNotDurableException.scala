package io.sparkcheckpointstorage.coordinator

import java.io.IOException

/** A batch cannot commit: state files written in the background are not durable (the message says which and why). */
final class StateNotDurableException(message: String) extends IOException(message)
