"""Who acts: the account of the real user ID, never the environment's word for it."""

from __future__ import annotations

import os
import pwd

import pytest

from swamp.store.clock import account_of, current_user


def test_the_account_is_the_password_databases_name_for_the_real_user_id(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LOGNAME", "ceo")
    monkeypatch.setenv("USER", "ceo")
    monkeypatch.setenv("USERNAME", "ceo")
    assert current_user() == pwd.getpwuid(os.getuid()).pw_name


def test_a_user_id_without_a_name_is_its_number() -> None:
    unnamed = next(uid for uid in range(54321, 64000) if not _named(uid))
    assert account_of(unnamed) == str(unnamed)


def _named(uid: int) -> bool:
    try:
        pwd.getpwuid(uid)
    except KeyError:
        return False
    return True
