package io.sqlext.s3a;

import java.io.IOException;

import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.s3a.commit.PathCommitException;
import org.apache.hadoop.fs.s3a.commit.magic.MagicS3GuardCommitter;
import org.apache.hadoop.mapreduce.JobContext;
import org.apache.hadoop.mapreduce.TaskAttemptContext;

/**
 * S3A's magic committer without its job commit: each task's files stay pending multipart uploads to their
 * final keys, listed in the task's {@code .pendingset} under the job's {@code __magic_job-<uuid>} dir, and the
 * job commit completes none of them. sqlext records them in its commit log, then completes them itself
 * (sqlext/io/s3magic.py), so that no file of a batch becomes visible before the batch is recorded.
 */
public class SqlextMagicCommitter extends MagicS3GuardCommitter {

  public SqlextMagicCommitter(Path outputPath, TaskAttemptContext context) throws IOException {
    super(outputPath, context);
  }

  /** Checks the job's pendingsets are there; publishes nothing, deletes nothing. */
  @Override
  public void commitJob(JobContext context) throws IOException {
    Path jobAttempt = getJobAttemptPath(context);
    FileSystem fs = getDestFS();
    if (!fs.exists(jobAttempt)) {
      throw new PathCommitException(jobAttempt, "no task manifests (.pendingset) were written for this job");
    }
  }
}
