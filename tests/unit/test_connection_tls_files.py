"""TLS files named in the connection settings that the driver cannot load are configuration
errors that name the option and the file, never the URI's password or key-file password.

No server is needed: the driver reads these files while the client is built, before any
connection is attempted.
"""

from __future__ import annotations

import traceback
from pathlib import Path

import pytest
import structlog

from agent_memory import connect
from agent_memory.config import load_settings
from agent_memory.errors import ConfigurationError

PASSWORD = "pw-7f3a9c1e5b"
KEY_PASSWORD = "keypass-41d8e2b6"
BASE = f"mongodb://app:{PASSWORD}@127.0.0.1:9/?tls=true"


def _shown(exc: BaseException) -> str:
    """Message, repr and the whole traceback with every cause and context shown."""
    return "".join(traceback.format_exception(exc)) + repr(exc)


async def _refused(uri: str, **client_options: object) -> tuple[ConfigurationError, list]:
    settings = load_settings(mongodb_uri=uri, connect_timeout_ms=300)
    with structlog.testing.capture_logs() as logs, pytest.raises(ConfigurationError) as caught:
        await connect(settings, client_options=client_options or None)
    error = caught.value
    assert PASSWORD not in _shown(error) and KEY_PASSWORD not in _shown(error)
    assert PASSWORD not in repr(logs) and KEY_PASSWORD not in repr(logs)
    assert "\n" not in str(error)
    assert error.__cause__ is None and error.__suppress_context__  # no driver traceback shown
    return error, logs


async def test_a_missing_certificate_key_file_names_the_option(tmp_path: Path):
    missing = tmp_path / "client.pem"
    error, _ = await _refused(
        f"{BASE}&tlsCertificateKeyFile={missing}&tlsCertificateKeyFilePassword={KEY_PASSWORD}"
    )
    message = str(error)
    assert f"tlsCertificateKeyFile='{missing}'" in message
    assert "No such file or directory" in message and "check the path" in message
    assert "app:***@" in message and "tlsCertificateKeyFilePassword=***" in message


async def test_a_directory_given_as_the_ca_file_names_the_option(tmp_path: Path):
    error, _ = await _refused(f"{BASE}&tlsCAFile={tmp_path}")
    assert f"tlsCAFile='{tmp_path}'" in str(error) and "Is a directory" in str(error)


async def test_a_ca_file_that_is_not_pem_names_the_option(tmp_path: Path):
    junk = tmp_path / "ca.pem"
    junk.write_text("not a certificate\n")
    error, _ = await _refused(f"{BASE}&tlsCAFile={junk}")
    assert f"tlsCAFile='{junk}'" in str(error) and "not a usable PEM file" in str(error)


async def test_the_option_spelt_in_another_case_or_passed_as_a_client_option(tmp_path: Path):
    error, _ = await _refused(f"{BASE}&TLSCAFILE={tmp_path / 'nope.pem'}")
    assert f"tlsCAFile='{tmp_path / 'nope.pem'}'" in str(error)
    error, _ = await _refused(BASE, tlsCRLFile=str(tmp_path / "crl.pem"))
    assert f"tlsCRLFile='{tmp_path / 'crl.pem'}'" in str(error)


async def test_the_failing_file_is_picked_out_when_several_are_given(tmp_path: Path):
    ca, crl = tmp_path / "ca.pem", tmp_path / "crl.pem"
    error, _ = await _refused(f"{BASE}&tlsCAFile={ca}&tlsCRLFile={crl}")
    # The driver opens one of them first; the option named is the one holding that file.
    named = {f"tlsCAFile='{ca}'", f"tlsCRLFile='{crl}'"}
    assert any(str(error).startswith(option) for option in named), str(error)
    assert sum(option in str(error) for option in named) == 1


async def test_another_os_error_building_the_client_is_a_configuration_error(monkeypatch):
    from agent_memory.mongo import connection

    def refuse(*args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied", "/etc/ssl/private")

    monkeypatch.setattr(connection, "AsyncMongoClient", refuse)
    error, _ = await _refused(BASE)
    assert str(error) == (
        "the MongoDB client for 'mongodb://app:***@127.0.0.1:9/?tls=true' could not be "
        "created: Permission denied"
    )
