package io.sparkcheckpointstorage.faults;

import java.io.IOException;

import org.apache.hadoop.fs.Path;

/** The failure {@link FaultInjectingFileSystem} injects: an I/O error naming the operation and path. */
public class InjectedFaultException extends IOException {
  public InjectedFaultException(String op, String when, Path path) {
    super("Injected fault: " + op + " of " + path + " failed " + when);
  }
}
