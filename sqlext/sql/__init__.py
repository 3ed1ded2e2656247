"""The Flink SQL dialect: sqlglot dialect, statement parser, Flink types, Hive-dialect DDL, hints.
May import the shared core (top-level modules) only."""
