"""The options reference, generated from the option declarations of every connector.

    python -m sqlext.connectors.reference > docs/connectors.md

The full document covers the built-in connectors (so it does not depend on what else is installed);
``render_reference(NAME)`` and ``sqlext connectors NAME`` cover any discovered connector. A test in
``tests/core/test_registry.py`` fails when docs/connectors.md drifts from this output.
"""

from __future__ import annotations

import sys
from typing import Any

from sqlext.options import ConfigOption
from sqlext.registry import BUILT_INS, ConnectorFactory, find_factory


def _escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_connector(factory: ConnectorFactory) -> str:
    """One connector's section: identifier, description and a table of its options."""
    lines = [f"## {factory.identifier}", "", factory.description, ""]
    required = [(o, "yes") for o in factory.required_options()]
    optional = [(o, "no") for o in factory.optional_options()]
    if not required and not optional:
        return "\n".join([*lines, "No options besides `connector`."]) + "\n"
    lines += ["| option | required | type | default | description |", "|---|---|---|---|---|"]
    for option, needed in [*required, *optional]:
        key = f"{option.key}*" if option.prefix else option.key
        lines.append(
            f"| `{key}` | {needed} | {option.type.name} | `{_escape(option.default_text)}` | "
            f"{_escape(option.description)}{_fallbacks(option)} |"
        )
    return "\n".join(lines) + "\n"


def _fallbacks(option: ConfigOption[Any]) -> str:
    """The other names an option is read under, for its description."""
    if not option.fallback_keys:
        return ""
    return " Also read from " + ", ".join(f"'{key}'" for key in option.fallback_keys) + " when it is not set."


def render_reference(identifier: str | None = None) -> str:
    """Markdown for one connector (any discovered identifier), or the document of the built-in ones."""
    if identifier is not None:
        return render_connector(find_factory(identifier))
    header = (
        "# Connector options\n\n"
        "Generated from the option declarations (`python -m sqlext.connectors.reference > docs/connectors.md`);\n"
        "`sqlext connectors NAME` prints the same for one connector. Options ending in `*` are families\n"
        "(any key with that prefix).\n\n"
        "Values are written as in Flink: a Duration as `'100ms'`, `'10 s'`, `'1 min'`, `'1 h'`, `'2 d'` (a bare\n"
        "number is milliseconds), a MemorySize as `'512kb'`, `'128MB'`, `'1 gb'` (a bare number is bytes), an\n"
        "Integer in Java's 32-bit range. Unlike Flink, a Duration longer than 36500 d (100 years) is refused: it\n"
        'could only mean "never", and a partition\'s time plus it would overflow the calendar.\n'
    )
    from sqlext.catalog.changelog_reference import render_reference as render_changelog
    from sqlext.catalog.formats_reference import render_reference as render_formats

    sections = [render_connector(find_factory(name)) for name in sorted(BUILT_INS)]
    return header + "\n" + "\n".join([*sections, render_formats(), render_changelog()])


def render_one(identifier: str) -> str:
    """Markdown for one connector (``sqlext connectors NAME``)."""
    return render_reference(identifier)


def main(argv: list[str] | None = None) -> int:
    """``python -m sqlext.connectors.reference [NAME]``: print the reference (of one connector)."""
    args = sys.argv[1:] if argv is None else argv
    print(render_reference(args[0] if args else None), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
