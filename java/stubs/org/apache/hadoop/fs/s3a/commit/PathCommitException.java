package org.apache.hadoop.fs.s3a.commit;

import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.PathIOException;

/** Compile-only stub of hadoop-aws's class (see java/stubs/README.md): the constructor sqlext calls. */
public class PathCommitException extends PathIOException {
  public PathCommitException(Path path, String message) {
    super(path.toString(), message);
  }
}
