package org.apache.hadoop.fs.s3a;

import org.apache.hadoop.fs.FileSystem;

/** Compile-only stub of hadoop-aws's class (see java/stubs/README.md): a parameter type of the factory. */
public abstract class S3AFileSystem extends FileSystem {}
