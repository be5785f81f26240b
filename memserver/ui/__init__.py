"""`memserver ui`: the local review page — see and correct what memserver knows.

Server-rendered HTML (Jinja2) with a little progressive enhancement shipped beside it
(`static/`); nothing is fetched from elsewhere. It reads through `store.browse` and the
recall pipeline, and writes only through the services the MCP tools use, as actor `ui`.

- `state`       the engine, store, browser and (loaded in the background) recaller
- `guard`       Host/Origin checks, the bearer token and the form token (ASGI middleware)
- `app`         `build_app`: the Starlette app, its pages
- `actions`     the POST handlers: every change a person makes
- `views`       what the pages show, worked out: stale diffs, filters, undo choices
- `templates`   the Jinja2 environment; `highlight` colours code (Pygments)
- `serve`       run it with uvicorn on 127.0.0.1 and open the browser
- `mount`       the same page as a route of `memserver serve --transport http`, at /ui/
"""
