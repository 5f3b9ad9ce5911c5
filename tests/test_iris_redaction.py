"""``iris.redaction`` shows a request's environment exactly as Iris's own redaction does
(marin-iris's ``redact_request_env_vars``, the spec), on curated and random names and values."""

from __future__ import annotations

import random
import string

from iris.cluster.redaction import redact_request_env_vars
from iris.rpc import controller_pb2

from fray_jupyter.iris.redaction import REDACTED, redact_env, redacted_names, sensitive_name

NAMES = ["HF_TOKEN", "TOKENIZERS_PARALLELISM", "max_tokens", "session_token_count", "WANDB_API_KEY", "wandbApiKey",
         "AWS_ACCESS_KEY_ID", "cache_key", "AUTHOR", "MY_PASSWORD", "job_id", "RUN_NAME", "PATH", "url", "JAX_PLATFORMS",
         "GITHUB_TOKEN", "private-key", "DB_PASSWD", "api_key_name", "MARIN_PREFIX", "X", "token_budget", "Secret"]
VALUES = ["false", "/alice/some-job-name/0", "sk-" + "a1B2" * 8, "AKIA" + "ABCDEFGHIJKLMNOP", "ghp_" + "x1Y2z3" * 7,
          "eyJhbGciOi.eyJzdWIiOi.c2lnbmF0dXJl", "Zm9vYmFyYmF6cXV4cXV1eGNvcmdlZ3JhdWx0", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
          "gs://marin-us-central2/x", "prefix Zm9vYmFyYmF6cXV4cXV1eGNvcmdlZ3JhdWx0YWJj suffix", "",
          "-----BEGIN RSA PRIVATE KEY-----\nabc\n-----END RSA PRIVATE KEY-----", "xoxb-1234567890-abc"]


def _iris(env: dict[str, str], secrets: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    request = controller_pb2.Controller.LaunchJobRequest()
    request.environment.env_vars.update(env)
    request.environment.secrets.update(secrets)
    shown = redact_request_env_vars(request).environment
    return dict(shown.env_vars), dict(shown.secrets)


def test_curated_names_and_values_read_as_iris_shows_them() -> None:
    env = {f"{name}": value for name in NAMES for value in VALUES[:1]}
    assert redact_env(env, {}) == _iris(env, {})
    for name in ("value", "job_id", "NOTE"):
        env = {f"{name}{i}" if i else name: value for i, value in enumerate(VALUES)}
        assert redact_env(env, {"HF_TOKEN": "hf-secret"}) == _iris(env, {"HF_TOKEN": "hf-secret"})
    assert sensitive_name("HF_TOKEN") and not sensitive_name("TOKENIZERS_PARALLELISM")
    assert not sensitive_name("max_tokens") and sensitive_name("session_token_count")


def test_random_names_and_values_read_as_iris_shows_them() -> None:
    pick = random.Random(20261204)
    alphabet = string.ascii_letters + string.digits + "+/_-=.: "
    for _ in range(300):
        words = [pick.choice(["api", "key", "token", "max", "Auth", "id", "name", "x", "Session", "len", "PRIVATE"])
                 for _ in range(pick.randint(1, 3))]
        name = pick.choice(["_", "-", ""]).join(words)
        value = pick.choice([*VALUES, "".join(pick.choice(alphabet) for _ in range(pick.randint(0, 60)))])
        assert redact_env({name: value}, {}) == _iris({name: value}, {}), (name, value)


def test_a_redacted_answer_names_what_it_hid() -> None:
    env, secrets = redact_env({"HF_TOKEN": "x", "MODE": "fast"}, {"WANDB": "y"})
    assert env == {"HF_TOKEN": REDACTED, "MODE": "fast"} and secrets == {"WANDB": REDACTED}
    assert redacted_names(env, secrets) == ["HF_TOKEN", "WANDB"]
