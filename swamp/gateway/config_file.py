"""`swamp gateway --connect SOCKET --config FILE` (GATEWAY-016): a gateway in front of a serve reads
no repository, so its own settings (the public URL, the webhook routes) come from FILE, written as
the `gateway:` part of `.swamp.yaml` is and checked by the same rules (GATEWAY-011, GATEWAY-070).
A route's `{file: PATH}` secret is read relative to FILE's folder."""

from __future__ import annotations

import os
from typing import Any

from ..domain.errors import UsageError
from ..domain.settings import SettingsInvalid, parse_settings


def read_config(path: str) -> tuple[str | None, dict[str, Any] | None, str]:
    """(gateway.publicUrl, gateway.routes, the folder secrets are read from); settings_invalid
    naming the key, as for .swamp.yaml, when FILE says something else."""
    from ..store.yamlio import YamlError, load_yaml

    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        raise UsageError(
            f"--config {path} cannot be read ({exc.strerror or exc}); give a readable YAML file", {}
        ) from None
    name = os.path.basename(path)
    try:
        doc = load_yaml(data.decode("utf-8"))
    except (UnicodeDecodeError, YamlError) as exc:
        raise SettingsInvalid(f"{name}: not UTF-8 YAML ({exc}); fix it", {"path": path, "key": ""}) from None
    if doc is None:
        doc = {}
    if not isinstance(doc, dict) or set(doc) - {"gateway"}:
        key = next(iter(sorted(set(doc) - {"gateway"})), "") if isinstance(doc, dict) else ""
        raise SettingsInvalid(
            f"{name}: {key or 'the file'} is not a gateway setting; --config holds only "
            "`gateway: {publicUrl: URL, routes: {...}}`",
            {"path": path, "key": key},
        )
    try:
        settings = parse_settings({"version": 1, **doc})
    except SettingsInvalid as exc:
        raise SettingsInvalid(
            exc.message.replace(".swamp.yaml", name, 1), {**exc.details, "path": path}
        ) from None
    return settings.public_url, settings.gateway_routes, os.path.dirname(os.path.abspath(path))
