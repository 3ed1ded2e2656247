pytest_plugins = ["tests.support.services"]
