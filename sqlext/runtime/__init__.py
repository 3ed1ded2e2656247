"""What sqlext uses of the machine it runs on: where it keeps its files (``paths``), the background servers it
starts and stops (``process``), the addresses they listen on (``netbind``), its commands' console logging
(``console``), the Maven jars fetched on demand (``jars``) and its Java classes in a running Spark session
(``jvm_classes``). Part of the shared core: it imports only the core's top-level modules, never a layer above."""
