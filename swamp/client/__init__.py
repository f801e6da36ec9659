"""Drive `swamp serve` from Python: `Client`, one typed method per request type.

    from swamp.client import Client, SwampError

    with Client.spawn("path/to/repo") as client:          # or Client.connect("/run/user/1000/swamp.sock")
        run = client.run("release")                         # the run document (a dict), suspended
        for wait in client.waits()["waits"]:
            client.signal(wait["waitId"], {"verdict": "ship"}, resume=True)
        try:
            client.history_get("no-such-run")
        except SwampError as err:
            print(err.code, err.message)                    # run_not_found ...

Results are the plain dicts swamp sends, typed by `swamp.client.results` (TypedDicts checked against
spec/schemas/results.schema.json). A refusal raises `SwampError` (`code`, `message`, `details`); a
connection that dies raises `ConnectionLost` (a `SwampError`, code `connection_lost`) in every call
still waiting. One client may be used from many threads at once. `examples/bot/answer.py` is a bot
that answers a wait as soon as it opens.

This package imports only the standard library (no rich, jsonschema, pydantic or yaml), and the
`swamp` command never imports it.
"""

from __future__ import annotations

from .client import Client, Subscription
from .errors import ConnectionLost, SwampError
from .wire import Call, Event

__all__ = ["Call", "Client", "ConnectionLost", "Event", "Subscription", "SwampError", "schema"]


def schema(name: str) -> dict[str, object]:
    """A JSON Schema of the spec, as shipped with swamp, parsed: `schema("results")` is
    spec/schemas/results.schema.json; a whole file name works too (`schema("errors.json")`, the
    error-code registry). Raises `FileNotFoundError` for a name that is not there."""
    import json
    from importlib.resources import files

    folder = files("swamp").joinpath("schemas")
    candidates = [name] if name.endswith(".json") else [f"{name}.schema.json", f"{name}.json"]
    for candidate in candidates:
        entry = folder.joinpath(candidate)
        if entry.is_file():
            loaded: dict[str, object] = json.loads(entry.read_text(encoding="utf-8"))
            return loaded
    raise FileNotFoundError(f"no schema {name!r} in swamp's spec/schemas; try 'results' or 'requests'")
