"""The ways into Spark: the session extension behind ``spark.sql`` (and the statement runner of ``sqlext
run``), and ``format("sqlext")``. May import jobs and everything below it; only entry points import it."""
