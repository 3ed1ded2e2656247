"""The options reference, generated from the option declarations of every connector.

    python -m sqlext.connectors.reference > docs/connectors.md

``tests/test_registry.py`` fails when docs/connectors.md drifts from this output.
"""

from __future__ import annotations

from sqlext.registry import ConnectorFactory, factories, find_factory


def _escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_connector(factory: ConnectorFactory) -> str:
    lines = [f"## {factory.identifier}", "", factory.description, ""]
    lines += ["| option | required | type | default | description |", "|---|---|---|---|---|"]
    required = [(o, "yes") for o in factory.required_options()]
    optional = [(o, "no") for o in factory.optional_options()]
    for option, needed in [*required, *optional]:
        key = f"{option.key}*" if option.prefix else option.key
        lines.append(
            f"| `{key}` | {needed} | {option.type.name} | `{_escape(option.default_text)}` | "
            f"{_escape(option.description)} |"
        )
    return "\n".join(lines) + "\n"


def render_reference() -> str:
    """Markdown for every built-in and discovered connector."""
    header = (
        "# Connector options\n\n"
        "Generated from the option declarations (`python -m sqlext.connectors.reference > docs/connectors.md`);\n"
        "`sqlext connectors NAME` prints the same for one connector. Options ending in `*` are families\n"
        "(any key with that prefix).\n"
    )
    return header + "\n" + "\n".join(render_connector(factories()[name]) for name in sorted(factories()))


def render_one(identifier: str) -> str:
    return render_connector(find_factory(identifier))


if __name__ == "__main__":
    print(render_reference(), end="")
