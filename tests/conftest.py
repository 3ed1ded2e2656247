pytest_plugins = [
    "tests.support.services",
    "tests.support.cluster",
    "tests.support.flink",
    "tests.support.kafka",
    "tests.support.schema_registry",
    "tests.support.trino",
    "tests.support.stores",
    "tests.support.ordering",
    "tests.support.class_archive",
    "tests.support.kdc",
    "tests.support.java_classes",
]
