"""Read the repository's settings from its marker file `.swamp.yaml`, cheaply.

Why cheap: every command that works on runs reads the settings (the hooks decide what a save
starts; with issue 17 the store is chosen there), `swamp workflow signal` among them, whose start
time is watched. Importing PyYAML costs about 38 ms, a quarter of a signal. So:

- a marker that says only what `repo init` writes (`version: 1`, comments, blank lines) is the
  defaults, with no YAML parser;
- any other content is parsed once and the checked settings are kept as JSON in
  `.swamp/index/settings.json` beside the SHA-256 of the marker's bytes; later commands read
  that instead while the marker's bytes are the same (an edit changes the digest, so it is
  never stale). The copy is rebuildable state like the other indexes: deleting it costs one parse.

The marker is never read through a symbolic link (REPO-013), and the copy is written with the
store's no-link helpers.
"""

from __future__ import annotations

import errno
import json
from typing import Any

from ..domain.settings import DEFAULTS, Settings, SettingsInvalid, parse_settings
from .files import read_file, refuse_links, write_replace
from .repo import MARKER, RepoLayout


def load_settings(layout: RepoLayout) -> Settings:
    """The repository's settings; `settings_invalid` when the marker says something swamp does
    not understand (REPO-012..015)."""
    try:
        data = read_file(layout.marker)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise SettingsInvalid(
                f"{MARKER} is a symbolic link, which swamp does not follow; replace it with a regular file",
                {"path": MARKER, "key": ""},
            ) from None
        raise SettingsInvalid(
            f"{MARKER} cannot be read ({exc.strerror or exc}); check its permissions",
            {"path": MARKER, "key": ""},
        ) from None
    if _is_default(data):
        return DEFAULTS
    import hashlib

    digest = hashlib.sha256(data).hexdigest()
    cache = layout.datastore / "index" / "settings.json"
    try:
        kept = json.loads(read_file(cache))
        if kept.get("digest") == digest:
            return parse_settings(kept["settings"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError, SettingsInvalid):
        pass
    settings = parse_settings(_parse(data))
    try:
        refuse_links(str(layout.root), str(cache.parent))
        cache.parent.mkdir(parents=True, exist_ok=True)
        body = {"digest": digest, "settings": settings_document(settings)}
        write_replace(cache, json.dumps(body, separators=(",", ":")).encode("utf-8"))
    except OSError:
        pass  # best effort: the next command parses the marker again
    return settings


def _is_default(data: bytes) -> bool:
    """Only what `repo init` writes: `version: 1`, comments and blank lines (or nothing)."""
    meaningful = [
        line.strip() for line in data.splitlines() if line.strip() and not line.lstrip().startswith(b"#")
    ]
    return meaningful in ([], [b"version: 1"])


def _parse(data: bytes) -> Any:
    from .yamlio import YamlError, load_yaml  # ~38 ms: only for a marker with settings in it

    try:
        return load_yaml(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise SettingsInvalid(
            f"{MARKER} is not UTF-8 text; save it as UTF-8", {"path": MARKER, "key": ""}
        ) from None
    except YamlError as exc:
        problem = str(exc).replace(' in "<unicode string>",', " at")
        raise SettingsInvalid(
            f"{MARKER} is not valid YAML ({problem}); fix it", {"path": MARKER, "key": ""}
        ) from None


def _hook_document(hook: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"command": hook.command, "timeout": hook.timeout}
    if hook.retries:
        body.update(retries=hook.retries, backoff=hook.backoff)
    if hook.before is not None:
        body["before"] = hook.before
    return body


def settings_document(settings: Settings) -> dict[str, Any]:
    """The settings as the document parse_settings reads back."""
    doc: dict[str, Any] = {"version": settings.version}
    if settings.hooks:
        doc["hooks"] = {hook.name: _hook_document(hook) for hook in settings.hooks}
    if settings.store is not None:
        doc["store"] = settings.store
    if settings.admins.describe():
        doc["admins"] = {key: names for key, names in settings.admins.to_dict().items() if names}
    gateway: dict[str, Any] = {}
    if settings.public_url is not None:
        gateway["publicUrl"] = settings.public_url
    if settings.gateway_routes is not None:
        gateway["routes"] = settings.gateway_routes
    if gateway:
        doc["gateway"] = gateway
    return doc
