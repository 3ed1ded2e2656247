"""Built-in connectors, one home each (``filesystem/``, ``kafka/``, ``datagen``, ``print``, ``reference``): a factory,
its options, its source and sink. May import catalog, sql, io and the shared core; never jobs, spark or entry points."""
