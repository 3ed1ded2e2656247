"""The sink side: the insert plan, writers, the commit protocol and partition commit."""
