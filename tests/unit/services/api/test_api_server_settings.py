"""The API's uvicorn parser and loop settings (decision 0167): httptools and uvloop by default
(uvicorn's `auto`, both installed from the lock), the pure-Python pair selectable, anything
else refused in one line naming the variable and what is accepted."""

from __future__ import annotations

import pytest
from uvicorn.config import Config

from tickwheel.errors import InvalidInput
from tickwheel.services.api.service import ApiSettings
from tickwheel.services.environment import from_env


def test_the_default_is_auto_and_auto_takes_httptools_and_uvloop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("TICKWHEEL_API_HTTP", raising=False)
    monkeypatch.delenv("TICKWHEEL_API_LOOP", raising=False)
    settings = from_env(ApiSettings)
    assert (settings.http, settings.loop) == ("auto", "auto")
    config = Config(app=None, http=settings.http, loop=settings.loop)
    config.load()
    assert config.http_protocol_class.__module__ == "uvicorn.protocols.http.httptools_impl"
    factory = config.get_loop_factory()
    assert factory is not None and factory.__module__.startswith("uvloop")


def test_the_pure_python_pair_is_selectable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TICKWHEEL_API_HTTP", "h11")
    monkeypatch.setenv("TICKWHEEL_API_LOOP", "asyncio")
    settings = from_env(ApiSettings)
    assert (settings.http, settings.loop) == ("h11", "asyncio")


@pytest.mark.parametrize(
    ("name", "value", "accepted"),
    [
        ("TICKWHEEL_API_HTTP", "zttp", "auto, httptools, h11"),
        ("TICKWHEEL_API_LOOP", "trio", "auto, uvloop, asyncio"),
    ],
)
def test_an_unknown_choice_is_refused_in_one_line(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str, accepted: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(InvalidInput) as refused:
        from_env(ApiSettings)
    message = str(refused.value)
    assert name in message and accepted in message and "\n" not in message
