"""What a GSSAPI error says, in one line: shared by the Kerberos logins of the metastore client, the gateway
and WebHDFS."""

from __future__ import annotations


def gss_text(exc: Exception) -> str:
    """``exc``'s message (python-gssapi's ``gen_message()`` where it has one) with its whitespace folded."""
    generator = getattr(exc, "gen_message", None)
    text = generator() if callable(generator) else str(exc)
    return " ".join(str(text).split())
