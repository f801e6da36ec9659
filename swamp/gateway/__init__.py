"""The gateway: swamp's optional HTTP edge (`pip install 'swamp[gateway]'`, `swamp gateway`).

It speaks HTTP outward (one-time answer links for people, a JSON API for programs, provider
webhooks) and calls the same request table inward (swamp/protocol/requests.py `handle`), so every
rule, refusal code and audit entry is the core's own. Nothing in swamp proper listens on HTTP: this
package is its own process, and the only one that imports Starlette and uvicorn.

Modules: server.py (the process: listen, log, stop), app.py (the ASGI app and its routes),
inward.py (asking the core), api.py (JSON for programs), pages.py and forms.py (answer links for
people), webhooks.py (provider callbacks routed to a wait).
"""
