"""The server's stdio transport: each message read whole on a reader thread, handled on the loop.

pygls' own stdio reader hands every header line and the body to its thread pool one by one and
awaits each: three thread hand-overs and event-loop wake-ups per keystroke (``Content-Length``,
the blank line, the body). Here one daemon thread reads whole messages and hands each body to
the event loop once (``call_soon_threadsafe``); the loop parses and dispatches it as pygls'
``run_async`` does, in the order the client sent them.
"""
from __future__ import annotations

import asyncio
import json
import logging
import re
import threading
from typing import BinaryIO

from pygls.exceptions import JsonRpcException

log = logging.getLogger(__name__)

CONTENT_LENGTH = re.compile(rb"^Content-Length: (\d+)\r\n$")


def read_message(stream: BinaryIO) -> bytes:
    """The body of the next message on ``stream`` (bytes), or ``b""`` at the end of input.
    Headers as pygls reads them: the first ``Content-Length`` line gives the length, the first
    blank line after it ends the headers, other lines are ignored."""
    length = 0
    while True:
        header = stream.readline()
        if not header:
            return b""
        if not length:
            match = CONTENT_LENGTH.fullmatch(header)
            if match:
                length = int(match.group(1))
        if length and not header.strip():
            return stream.read(length)


async def serve(server, stdin: BinaryIO) -> None:
    """Handle the messages on ``stdin`` with ``server`` (a pygls ``LanguageServer``) until the
    input ends or the server's stop event is set; a message that fails is logged and reported
    (``server.report_server_error``), as pygls does. ``SystemExit`` (the ``exit`` notification)
    propagates out of the loop."""
    loop = asyncio.get_running_loop()
    ended: asyncio.Future = loop.create_future()

    def handle(body: bytes) -> None:
        if not body or server._stop_event.is_set():
            if not ended.done():
                ended.set_result(None)
            return
        try:
            message = json.loads(body, object_hook=server.protocol.structure_message)
            server.protocol.handle_message(message)
        except Exception as exc:  # logged and reported: the server stays up
            log.exception("Unable to handle message")
            server.report_server_error(exc, JsonRpcException)

    def read() -> None:
        while True:
            body = read_message(stdin)
            try:
                loop.call_soon_threadsafe(handle, body)
            except RuntimeError:  # the loop closed: the server exited
                return
            if not body:
                return

    threading.Thread(target=read, name="sbatch-lsp-stdin", daemon=True).start()
    await ended
