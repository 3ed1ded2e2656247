"""Built-in connectors. Each module declares one connector factory and its options."""
