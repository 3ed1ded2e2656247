pytest_plugins = ["tests.support.services", "tests.support.flink"]
