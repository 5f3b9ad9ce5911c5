"""How Iris redacts a job's environment when it shows a stored request (``GetJobStatus`` answers
with it redacted; ``iris job describe`` prints that), restated so the embedded controller answers
``GetJobStatus`` as Iris does and every surface shows a request the same way.

Rules (marin-iris's ``cluster/redaction.py`` over ``rigging.redaction``; the tests hold this module
to them on many keys and values):

* Every secret's value reads ``REDACTED``; its name stays.
* An env var whose *name* is sensitive reads ``REDACTED``. A name is split into words (a run of
  capitals, a capitalised word, a lower-case run, a run of digits; lower-cased): it is sensitive
  when a word is in ``SENSITIVE_WORDS`` — except when the only such words are ``token(s)`` and a
  word of ``COUNT_WORDS`` is there too (``max_tokens`` is a length) — or two neighbouring words are
  one of ``SENSITIVE_PAIRS``.
* Otherwise, under a name ``SAFE_NAME`` matches (an identifier), only prefixed secrets in the value
  are replaced (``PREFIXED``: PEM private keys, ``sk-…``, AWS ``AKIA``/``ASIA`` keys, GitHub and Slack
  tokens, JWTs).
* Otherwise a whole value that looks like a key (at least 24 of ``[A-Za-z0-9+/_-]`` with up to two
  ``=`` after, Shannon entropy at least ``MIN_ENTROPY`` bits per character) reads ``REDACTED``;
  else prefixed secrets are replaced, then every run of 32 or more such characters (not touching
  another) whose entropy is at least ``MIN_ENTROPY``.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping
from itertools import pairwise
from typing import Final

REDACTED: Final[str] = "[REDACTED]"
MIN_ENTROPY: Final[float] = 3.5
SENSITIVE_WORDS: Final[frozenset[str]] = frozenset({
    "apikey", "auth", "authentication", "authorization", "bearer", "credential", "credentials", "passphrase",
    "passwd", "password", "passwords", "pwd", "secret", "secrets", "session", "sessions", "token", "tokens"})
TOKEN_WORDS: Final[frozenset[str]] = frozenset({"token", "tokens"})
COUNT_WORDS: Final[frozenset[str]] = frozenset({
    "avg", "budget", "count", "len", "length", "limit", "max", "mean", "min", "num", "per", "size", "sum", "total",
    "window"})
SENSITIVE_PAIRS: Final[frozenset[tuple[str, str]]] = frozenset({("api", "key"), ("access", "key"), ("private", "key")})
SAFE_NAME: Final[re.Pattern[str]] = re.compile(
    r".*_(id|name|index|idx|no|num)s?$|^(name|namespace|hostname|username|address|ip_address|zone|region|status|"
    r"state|phase|stage|shard|kind|mode|reason|url|uri|path|file|filename|filepath|scale_group|image_tag|git_hash|"
    r"git_sha|commit|commit_sha|target|peer|user_agent)$", re.IGNORECASE)
PREFIXED: Final[re.Pattern[str]] = re.compile(
    r"-----BEGIN [A-Z ]+PRIVATE KEY-----[\s\S]+?-----END [A-Z ]+PRIVATE KEY-----|(?<![A-Za-z0-9_-])(?:"
    r"sk-[A-Za-z0-9_-]{20,}|AKIA[0-9A-Z]{16}|ASIA[0-9A-Z]{16}|gh[pousr]_[A-Za-z0-9]{36,}|xox[abprs]-[A-Za-z0-9-]{10,}"
    r"|eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+)(?![A-Za-z0-9_-])")
_WORD: Final[re.Pattern[str]] = re.compile(r"[A-Z]+(?![a-z])|[A-Z][a-z]+|[a-z]+|[0-9]+")
_KEY_CHARS: Final[re.Pattern[str]] = re.compile(r"[A-Za-z0-9+/_-]+={0,2}")
_KEY_RUN: Final[re.Pattern[str]] = re.compile(r"(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{32,}={0,2}(?![A-Za-z0-9+/_=-])")


def name_words(name: str) -> list[str]:
    """``WANDB_API_KEY`` / ``wandbApiKey`` → ``["wandb", "api", "key"]`` (module rules)."""
    return [word.lower() for word in _WORD.findall(name)]


def sensitive_name(name: str) -> bool:
    """Whether an env var called ``name`` holds a secret by its name (module rules)."""
    words = name_words(name)
    hits = SENSITIVE_WORDS.intersection(words)
    if hits <= TOKEN_WORDS and COUNT_WORDS.intersection(words):
        hits = frozenset()
    return bool(hits) or any(pair in SENSITIVE_PAIRS for pair in pairwise(words))


def entropy(text: str) -> float:
    """Shannon entropy of ``text`` in bits per character (0 for empty text)."""
    return -sum(n / len(text) * math.log2(n / len(text)) for n in Counter(text).values()) if text else 0.0


def _key_run(match: re.Match[str]) -> str:
    return REDACTED if entropy(match.group(0)) >= MIN_ENTROPY else match.group(0)


def redact_text(value: str) -> str:
    """``value`` with prefixed secrets and high-entropy key-like runs replaced (module rules)."""
    return _KEY_RUN.sub(_key_run, PREFIXED.sub(REDACTED, value))


def redact_env_value(name: str, value: str) -> str:
    """How Iris shows env var ``name``'s ``value`` (module rules)."""
    if sensitive_name(name):
        return REDACTED
    if SAFE_NAME.match(name):
        return PREFIXED.sub(REDACTED, value)
    if len(value) >= 24 and _KEY_CHARS.fullmatch(value) and entropy(value) >= MIN_ENTROPY:
        return REDACTED
    return redact_text(value)


def redact_env(env_vars: Mapping[str, str], secrets: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """A request's env vars and secrets as Iris shows them: (env vars, secrets), each value redacted."""
    return ({name: redact_env_value(name, value) for name, value in env_vars.items()},
            dict.fromkeys(secrets, REDACTED))


def redacted_names(env_vars: Mapping[str, str], secrets: Mapping[str, str]) -> list[str]:
    """The env vars and secrets whose value a controller returned redacted (holds ``REDACTED``), sorted."""
    return sorted({name for name, value in [*env_vars.items(), *secrets.items()] if REDACTED in value})
