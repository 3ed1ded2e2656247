package io.sqlext.hdfs;

import java.io.IOException;
import java.net.URI;
import java.security.PrivilegedExceptionAction;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.FilterFileSystem;
import org.apache.hadoop.fs.Options;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.security.UserGroupInformation;
import org.apache.spark.SparkContext;
import org.apache.spark.SparkContext$;
import org.apache.spark.TaskContext;

/**
 * The gateway's impersonation (HiveServer2's hive.server2.enable.doAs) on HDFS: an hdfs:// FileSystem that acts
 * as the user named by the Spark local property {@value #USER_PROPERTY} of the job (in a task) or of the calling
 * thread (in the driver), as a Hadoop proxy user of the process's login; as the login itself without one.
 *
 * <p>A DFSClient keeps the user it was created as for every call, so each user gets one DistributedFileSystem,
 * created inside that user's doAs and shared by the process; this wrapper (the class of fs.hdfs.impl, with
 * fs.hdfs.impl.disable.cache so that Hadoop's cache, keyed by the login, never hands one user's to another) is
 * made per FileSystem.get and delegates to the caller's. Closing it leaves the shared one open.
 */
public class ImpersonatingFileSystem extends FilterFileSystem {
  public static final String USER_PROPERTY = "sqlext.doAs.user";
  private static final ConcurrentHashMap<String, FileSystem> DELEGATES = new ConcurrentHashMap<>();

  @Override
  public void initialize(URI name, Configuration conf) throws IOException {
    this.fs = delegate(name, conf, currentUser());
    super.initialize(name, conf);
  }

  /** The user the caller acts for: the job's or the driver thread's local property; null for the login. */
  public static String currentUser() {
    TaskContext task = TaskContext.get();
    String user = task != null ? task.getLocalProperty(USER_PROPERTY) : null;
    if (task == null) {
      scala.Option<SparkContext> active = SparkContext$.MODULE$.getActive();
      if (active.isDefined()) {
        user = active.get().getLocalProperty(USER_PROPERTY);
      }
    }
    return user == null || user.isEmpty() ? null : user;
  }

  private static FileSystem delegate(URI name, Configuration conf, String user) throws IOException {
    String key = (user == null ? "" : user) + "@" + name.getScheme() + "://" + name.getAuthority();
    FileSystem found = DELEGATES.get(key);
    if (found != null) {
      return found;
    }
    Configuration inner = new Configuration(conf);
    inner.set("fs.hdfs.impl", DistributedFileSystem.class.getName());
    inner.setBoolean("fs.hdfs.impl.disable.cache", true);
    UserGroupInformation login = UserGroupInformation.getLoginUser();
    UserGroupInformation ugi = user == null ? login : UserGroupInformation.createProxyUser(user, login);
    FileSystem made;
    try {
      made = ugi.doAs((PrivilegedExceptionAction<FileSystem>) () -> FileSystem.newInstance(name, inner));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException(e);
    }
    FileSystem raced = DELEGATES.putIfAbsent(key, made);
    if (raced != null) {
      made.close();
      return raced;
    }
    return made;
  }

  /** A rename that replaces an existing file (FileContext's OVERWRITE) as the caller's user. */
  public void renameOverwrite(Path source, Path target) throws IOException {
    if (!(fs instanceof DistributedFileSystem)) {
      throw new IOException("not an HDFS file system: " + fs.getUri());
    }
    ((DistributedFileSystem) fs).rename(source, target, Options.Rename.OVERWRITE);
  }

  @Override
  public void close() {
    // The delegate is shared by every FileSystem.get of its user: it stays open.
  }
}
