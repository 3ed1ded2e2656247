"""Kafka's ``sasl.jaas.config`` (a table's ``properties.sasl.jaas.config``): the login module it names and
that module's options, read as Kafka's ``JaasConfig`` reads them (``Class flag key=value ...;``, values quoted
or bare).

Two uses: the gateway lets a user who is not an admin name only the login modules of :data:`USER_MODULES`, and
Kerberos's only with its own keytab (:func:`user_refusal`); and sqlext's own Kafka source, whose client
(librdkafka) takes no JAAS, gets the same login under librdkafka's names (:func:`librdkafka_properties`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from sqlext.options import is_true

KEY = "sasl.jaas.config"
KRB5_LOGIN_MODULE = "com.sun.security.auth.module.Krb5LoginModule"
PLAIN_LOGIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_LOGIN_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
#: The login modules a user who is not an admin may name: the JDK's Kerberos module (with a keytab of its own)
#: and Kafka's user/password modules; none loads a class of the user's choosing.
USER_MODULES = (KRB5_LOGIN_MODULE, PLAIN_LOGIN_MODULE, SCRAM_LOGIN_MODULE)
_FLAGS = ("required", "requisite", "sufficient", "optional")
_TOKEN = re.compile(r'\s*(?:"((?:[^"\\]|\\.)*)"|([=;])|([^\s=;"]+))')


@dataclass(frozen=True)
class LoginModule:
    """One entry of a JAAS config: the module's class, its control flag and its options."""

    class_name: str
    flag: str
    options: dict[str, str]

    def flag_on(self, option: str) -> bool:
        """Whether a boolean option (``useKeyTab``, ``useTicketCache``) is ``true``."""
        return is_true(self.options, option)


def _tokens(text: str) -> list[str]:
    tokens: list[str] = []
    position = 0
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None or match.end() == position:
            if text[position:].strip():
                raise ValueError(f"unexpected text at '{text[position : position + 20]}'")
            break
        quoted, punctuation, bare = match.groups()
        if quoted is not None:
            tokens.append(re.sub(r"\\(.)", r"\1", quoted))
        elif punctuation or bare:
            tokens.append(punctuation or bare)
        position = match.end()
    return tokens


def parse(text: str) -> list[LoginModule]:
    """The login modules of a JAAS config; ``ValueError`` saying what is wrong when it cannot be read."""
    tokens = _tokens(text)
    modules: list[LoginModule] = []
    while tokens:
        if len(tokens) < 2 or tokens[1].lower() not in _FLAGS:
            raise ValueError(f"expected 'LoginModuleClass {'|'.join(_FLAGS)} key=value ...;' at '{' '.join(tokens)}'")
        class_name, flag = tokens[0], tokens[1].lower()
        tokens = tokens[2:]
        options: dict[str, str] = {}
        while tokens and tokens[0] != ";":
            if len(tokens) < 3 or tokens[1] != "=":
                raise ValueError(f"expected key=value in the options of {class_name}")
            options[tokens[0]] = tokens[2]
            tokens = tokens[3:]
        if not tokens:
            raise ValueError(f"the entry of {class_name} does not end with ';'")
        tokens = tokens[1:]
        modules.append(LoginModule(class_name, flag, options))
    if not modules:
        raise ValueError("it names no login module")
    return modules


def user_refusal(module: LoginModule) -> str | None:
    """Why a user who is not an admin may not log in with ``module``; None when they may (Kerberos's module
    then names its keytab, which the caller judges as a path the server reads)."""
    if module.class_name not in USER_MODULES:
        return f"login module {module.class_name} is not one of {', '.join(USER_MODULES)}"
    if module.class_name != KRB5_LOGIN_MODULE:
        return None
    if module.flag_on("useTicketCache") or "ticketCache" in module.options:
        return f"{KRB5_LOGIN_MODULE} with useTicketCache logs in with the server's own tickets"
    if not module.flag_on("useKeyTab") or not module.options.get("keyTab"):
        return f"{KRB5_LOGIN_MODULE} needs useKeyTab=true and keyTab: without them it logs in as the server"
    return None


def librdkafka_properties(properties: Mapping[str, str]) -> dict[str, str]:
    """Java client properties as librdkafka takes them: the JAAS login under librdkafka's keys
    (``sasl.kerberos.keytab`` / ``sasl.kerberos.principal``; ``sasl.username`` / ``sasl.password``), a PEM
    truststore as ``ssl.ca.location``. Other keys are kept (librdkafka names any it does not know). A config
    that cannot be read raises ``ValueError``."""
    translated = {key: value for key, value in properties.items() if key != KEY}
    if KEY in properties:
        for module in parse(properties[KEY]):
            if module.class_name == KRB5_LOGIN_MODULE:
                if module.options.get("keyTab"):
                    translated.setdefault("sasl.kerberos.keytab", module.options["keyTab"])
                if module.options.get("principal"):
                    translated.setdefault("sasl.kerberos.principal", module.options["principal"])
            elif module.class_name in (PLAIN_LOGIN_MODULE, SCRAM_LOGIN_MODULE):
                for java, native in (("username", "sasl.username"), ("password", "sasl.password")):
                    if java in module.options:
                        translated.setdefault(native, module.options[java])
            else:
                raise ValueError(f"sqlext's own Kafka source (librdkafka) cannot log in with {module.class_name}")
    if translated.get("ssl.truststore.type", "").upper() == "PEM" and "ssl.truststore.location" in translated:
        translated.setdefault("ssl.ca.location", translated["ssl.truststore.location"])
        del translated["ssl.truststore.location"], translated["ssl.truststore.type"]
    return translated
