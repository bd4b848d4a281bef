"""`course fake-model`: the course's OpenAI-compatible stand-in, served on a loopback address."""

from __future__ import annotations

from pathlib import Path

import click

from course.errors import UsageError


@click.command("fake-model")
@click.option("--port", type=click.IntRange(0, 65535), default=0, show_default=True,
              help="The port (0 picks a free one).")
@click.option("--host", default="127.0.0.1", show_default=True, help="A loopback address to listen on.")
@click.option("--script", "script", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="A JSON file of scripted replies to answer with first.")
@click.option("--quiet", is_flag=True, help="Do not log requests to stderr.")
def fake_model(port: int, host: str, script: Path | None, quiet: bool) -> None:
    """Serve the course fake model (OpenAI-compatible chat completions) on a loopback address."""
    from course.fake_model import serve

    try:
        serve(port=port, host=host, script=script, verbose=not quiet)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        raise UsageError(f"cannot serve on {host}:{port}: {exc.strerror or exc}") from None
