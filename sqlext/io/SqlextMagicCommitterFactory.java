package io.sqlext.s3a;

import java.io.IOException;

import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.s3a.S3AFileSystem;
import org.apache.hadoop.fs.s3a.commit.AbstractS3ACommitterFactory;
import org.apache.hadoop.mapreduce.TaskAttemptContext;
import org.apache.hadoop.mapreduce.lib.output.PathOutputCommitter;

/** The committer factory of sqlext's batch writes to s3a:// ({@code mapreduce.outputcommitter.factory.scheme.s3a}). */
public class SqlextMagicCommitterFactory extends AbstractS3ACommitterFactory {

  @Override
  public PathOutputCommitter createTaskCommitter(
      S3AFileSystem fileSystem, Path outputPath, TaskAttemptContext context) throws IOException {
    return new SqlextMagicCommitter(outputPath, context);
  }
}
