"""Filesystems: one interface (``fs``) over Hadoop's FileSystem through the JVM and pyarrow's. May import the
shared core only."""
