package org.apache.hadoop.fs.s3a.commit.magic;

import java.io.IOException;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.mapreduce.JobContext;
import org.apache.hadoop.mapreduce.TaskAttemptContext;
import org.apache.hadoop.mapreduce.lib.output.PathOutputCommitter;

/**
 * Compile-only stub of hadoop-aws's class (see java/stubs/README.md): the constructor and the methods sqlext's
 * committer calls or overrides, with hadoop-aws's signatures (the real class extends AbstractS3ACommitter, which
 * implements the rest; here they only make the class concrete).
 */
public class MagicS3GuardCommitter extends PathOutputCommitter {
  public MagicS3GuardCommitter(Path outputPath, TaskAttemptContext context) throws IOException {
    super(outputPath, context);
  }

  public Path getJobAttemptPath(JobContext context) {
    throw stub();
  }

  public FileSystem getDestFS() throws IOException {
    throw stub();
  }

  @Override
  public void commitJob(JobContext context) throws IOException {
    throw stub();
  }

  @Override
  public Path getOutputPath() {
    throw stub();
  }

  @Override
  public Path getWorkPath() throws IOException {
    throw stub();
  }

  @Override
  public void setupJob(JobContext context) throws IOException {
    throw stub();
  }

  @Override
  public void setupTask(TaskAttemptContext context) throws IOException {
    throw stub();
  }

  @Override
  public boolean needsTaskCommit(TaskAttemptContext context) throws IOException {
    throw stub();
  }

  @Override
  public void commitTask(TaskAttemptContext context) throws IOException {
    throw stub();
  }

  @Override
  public void abortTask(TaskAttemptContext context) throws IOException {
    throw stub();
  }

  private static UnsupportedOperationException stub() {
    return new UnsupportedOperationException("a compile-only stub of hadoop-aws");
  }
}
