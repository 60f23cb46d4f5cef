"""`autograder serve`: the application on uvicorn, bound where the instructor says (loopback by default: the
TLS reverse proxy in front of it is what students reach)."""
from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from autograder.service.app import create_app


def run(course_dir: Path, host: str = "127.0.0.1", port: int = 8000, workers: int = 2,
        scheduler: str | None = None, accept_only: bool = False, forwarded_allow_ips: str = "127.0.0.1",
        ready=None) -> None:
    """Serve the course until interrupted. `ready(port)` is called once the socket listens (tests: port 0)."""
    import uvicorn

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    app, svc = create_app(course_dir, workers, scheduler, accept_only)
    config = uvicorn.Config(app, host=host, port=port, access_log=False,  # a URL may carry nothing secret, but
                            proxy_headers=True, forwarded_allow_ips=forwarded_allow_ips,  # the log stays ours
                            log_level="info", lifespan="on", timeout_graceful_shutdown=30)
    server = uvicorn.Server(config)
    if ready is not None or port == 0:
        async def main() -> None:
            task = asyncio.create_task(server.serve())
            while not server.started and not task.done():
                await asyncio.sleep(0.05)
            if server.started:
                bound = server.servers[0].sockets[0].getsockname()[1]
                print(f"autograder serve: listening on http://{host}:{bound}/", flush=True)
                if ready is not None:
                    ready(bound)
            await task

        asyncio.run(main())
    else:
        print(f"autograder serve: listening on http://{host}:{port}/ (course {svc.course_dir})", flush=True)
        server.run()
