"""The console benchmark's browser side: the app served by uvicorn on loopback, the raw limit
(the same bytes precomputed), and page loads timed in Chromium (`bench/bench_console.py`)."""

from __future__ import annotations

import statistics
import threading
import time
from typing import Any

from fastapi import FastAPI

from tickwheel.stack.broker import free_port


def serve(app: FastAPI) -> tuple[Any, int]:
    import uvicorn

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_config=None,
                                           access_log=False))  # fmt: skip
    threading.Thread(target=server.run, daemon=True).start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline:
            raise TimeoutError("uvicorn did not start")
        time.sleep(0.05)
    return server, port


def add_raw_route(app: FastAPI, bodies: dict[str, bytes]) -> None:
    """`/raw/<page>`: a page's bytes as captured, with the console's headers: the raw limit."""
    from fastapi.responses import Response

    from tickwheel.services.api.console.render import headers

    @app.get("/raw/{name}")
    def raw(name: str) -> Response:
        return Response(bodies[name], media_type="text/html; charset=utf-8", headers=headers())


def figures(measured: dict[str, dict[str, float]]) -> list[str]:
    page, raw = measured["page"], measured["raw"]
    return [
        f"- time to first byte: **{page['ttfb_ms']:.0f} ms** (the same bytes precomputed: "
        f"{raw['ttfb_ms']:.0f} ms, ratio {page['ttfb_ms'] / max(raw['ttfb_ms'], 0.1):.1f})",
        f"- full render (load event): **{page['render_ms']:.0f} ms** (precomputed: "
        f"{raw['render_ms']:.0f} ms, ratio {page['render_ms'] / max(raw['render_ms'], 0.1):.2f})",
        f"- HTML: {page['bytes'] / 1024:.0f} KiB",
    ]


def _timing(page: Any, url: str) -> tuple[float, float, int]:
    page.goto(url, wait_until="load", timeout=300_000)
    timing = page.evaluate(
        "(() => { const n = performance.getEntriesByType('navigation')[0];"
        " return [n.responseStart - n.requestStart, n.loadEventEnd, n.transferSize]; })()"
    )
    return timing[0], timing[1], int(timing[2])


def measure(context: Any, urls: dict[str, str], loads: int) -> dict[str, dict[str, float]]:
    """Each URL loaded `loads` times after a warm-up, the URLs taking turns (a page and its
    raw limit see the same moments of a shared machine)."""
    page = context.new_page()
    samples: dict[str, list[tuple[float, float, int]]] = {name: [] for name in urls}
    for index in range(loads + 1):
        for name, url in urls.items():
            timing = _timing(page, url)
            if index:  # the first load warms the caches (templates, schedules, chDB parts)
                samples[name].append(timing)
    page.close()
    return {
        name: {
            "ttfb_ms": statistics.median(s[0] for s in got),
            "render_ms": statistics.median(s[1] for s in got),
            "bytes": statistics.median(s[2] for s in got),
        }
        for name, got in samples.items()
    }
