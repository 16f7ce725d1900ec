"""Secrets as values: what counts as one, the shell's environment, public URLs, redaction."""

from __future__ import annotations

import base64
import time
from urllib.parse import quote

import pytest

from loopagent.client.openai import endpoint
from loopagent.secrets import (
    REDACTED,
    Redactor,
    is_secret,
    known_secrets,
    public_url,
    scrubbed_env,
    url_secrets,
    without_secret_options,
)


@pytest.mark.parametrize("name", [
    "OPENAI_API_KEY", "AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN", "MYSQL_PWD", "DB_PWD", "PGPASSWORD",
    "REDIS_PASSWD", "SMTP_PASS", "GOOGLE_APPLICATION_CREDENTIALS", "NPM_AUTH", "SENTRY_DSN",
    "SLACK_WEBHOOK_URL", "SESSION_COOKIE", "api_key", "--api-key",
])
def test_secret_looking_names(name):
    assert is_secret(name, "x")


@pytest.mark.parametrize("name", ["PWD", "OLDPWD", "PATH", "HOME", "LANG", "TERM", "DATABASE_URL", "EDITOR"])
def test_ordinary_names(name):
    assert not is_secret(name, "/usr/bin:/bin")


@pytest.mark.parametrize("value", [
    "postgres://app:pw@db/x", "https://user:s3cr%40t@example.test/simple", "redis://:hunter2@cache:6379/0",
    "mirror http://u:p@m.test/ and more",
])
def test_credentials_in_a_value_make_it_secret(value):
    assert is_secret("DATABASE_URL", value) and is_secret("ANYTHING", value)


@pytest.mark.parametrize("value", ["postgres://db/x", "ssh://git@host/repo", "https://example.test/?a=b@c",
                                   "user@example.test", "http://127.0.0.1:8080/v1"])
def test_urls_without_a_password_are_not_secret(value):
    assert not is_secret("DATABASE_URL", value)


def test_scrubbed_env_drops_secret_names_and_values_keeps_the_rest():
    environ = {
        "PATH": "/bin", "PWD": "/w", "OLDPWD": "/", "HOME": "/root", "GITHUB_TOKEN": "ghp_1", "MYSQL_PWD": "pw",
        "DATABASE_URL": "postgres://app:pw@db/x", "PLAIN_URL": "postgres://db/x", "HOOK": "contains sk-live-xyz",
        "ALLOWED_TOKEN": "t", "--api-key": "sk-live-xyz",
    }
    env = scrubbed_env(environ, allow=["ALLOWED_TOKEN"], secrets=("sk-live-xyz",))
    assert env == {"PATH": "/bin", "PWD": "/w", "OLDPWD": "/", "HOME": "/root", "PLAIN_URL": "postgres://db/x",
                   "ALLOWED_TOKEN": "t"}


def test_public_url_drops_userinfo_query_and_fragment():
    assert public_url("https://user:pw@example.test:8443/v1?api_key=sk-1#x") == "https://example.test:8443/v1"
    assert public_url("http://u:p@[::1]:8080/v1") == "http://[::1]:8080/v1"
    assert public_url("http://127.0.0.1:8080/v1") == "http://127.0.0.1:8080/v1"
    assert public_url("http://u:p@[::1/v1") == ""


def test_url_secrets_are_the_password_and_secret_query_values():
    url = "http://u:p%40ss@h/v1?api-key=K1&api-version=2024-01-01&sig=S%2B1&token="
    assert set(url_secrets(url)) == {"p@ss", "p%40ss", "K1", "S+1", "S%2B1"}
    assert url_secrets("http://h/v1") == []


def test_endpoint_keeps_the_query_after_the_path():
    assert endpoint("http://u:p@h:1/v1/?api-version=2") == "http://u:p@h:1/v1/chat/completions?api-version=2"
    assert endpoint("http://h/v1") == "http://h/v1/chat/completions"


def test_known_secrets_cover_key_variables_and_url_passwords():
    found = known_secrets({"GITHUB_TOKEN": "ghp_abcdef", "MYSQL_PWD": "short", "DATABASE_URL": "pg://a:pw4567@d/x",
                           "PATH": "/usr/bin"}, "sk-the-key", "http://u:basicpw@h/v1?api-key=querykey")
    assert {"sk-the-key", "ghp_abcdef", "pg://a:pw4567@d/x", "pw4567", "basicpw", "querykey"} <= set(found)
    assert "short" not in found and "/usr/bin" not in found  # too short to redact safely; not a secret


def test_redactor_replaces_plain_percent_and_base64_forms():
    key = "sk-abc/def+ghi="
    r = Redactor([key, "xy"])
    text = (f"a {key} b {quote(key, safe='')} c {base64.b64encode(key.encode()).decode()} "
            f"d {base64.urlsafe_b64encode(key.encode()).decode().rstrip('=')} e xy")
    out = r.redact(text)
    assert out == f"a {REDACTED} b {REDACTED} c {REDACTED} d {REDACTED} e xy"


def test_redactor_replaces_the_longest_match_whole():
    r = Redactor(["secret1", "secret1-and-more"])
    assert r.redact("[secret1-and-more] [secret1]") == f"[{REDACTED}] [{REDACTED}]"


def test_redactor_without_values_changes_nothing():
    assert Redactor([]).redact("anything sk-1") == "anything sk-1"


def test_redactor_is_fast_on_a_large_result():
    values = [f"value-{i:04d}-{'x' * (i % 20)}" for i in range(200)]
    r = Redactor(values)
    text = ("ordinary output line with nothing secret in it 0123456789\n" * 2000) + values[137]
    started = time.perf_counter()
    out = r.redact(text)
    assert time.perf_counter() - started < 0.5
    assert out.endswith(REDACTED) and values[137] not in out


def test_secret_options_leave_argv_with_their_values():
    args, found = without_secret_options(
        ["agent", "--api-key", "sk-1", "--base-url=http://u:p@h/v1", "--json", "task", "--", "--api-key", "x"])
    assert args == ["agent", "--json", "task", "--", "--api-key", "x"]
    assert found == {"--api-key": "sk-1", "--base-url": "http://u:p@h/v1"}


def test_a_plain_base_url_and_a_dangling_option_stay_in_argv():
    args, found = without_secret_options(["agent", "--base-url", "http://h/v1", "--api-key"])
    assert args == ["agent", "--base-url", "http://h/v1", "--api-key"] and found == {}
