package org.apache.hadoop.fs.s3a.commit;

import java.io.IOException;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.s3a.S3AFileSystem;
import org.apache.hadoop.mapreduce.TaskAttemptContext;
import org.apache.hadoop.mapreduce.lib.output.PathOutputCommitter;
import org.apache.hadoop.mapreduce.lib.output.PathOutputCommitterFactory;

/** Compile-only stub of hadoop-aws's class (see java/stubs/README.md): the method sqlext's factory implements. */
public abstract class AbstractS3ACommitterFactory extends PathOutputCommitterFactory {
  public abstract PathOutputCommitter createTaskCommitter(
      S3AFileSystem fileSystem, Path outputPath, TaskAttemptContext context) throws IOException;
}
