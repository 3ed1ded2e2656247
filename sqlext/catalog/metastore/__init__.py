"""The Hive Metastore: the Thrift client every call goes through, and the embedded metastore's launcher."""
