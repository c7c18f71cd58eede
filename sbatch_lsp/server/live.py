"""The editor's live check: the ``sbatch-lsp.liveCheck`` command (``workspace/executeCommand``,
arguments ``[uri]``) asks the controller about an open job script with ``sbatch --test-only``
(:mod:`sbatch_lsp.live`: only the ``#!`` line and the directive block are sent, nothing is
submitted) and returns its SB790 finding.

The result is an object: ``{"finding": {…}}`` with the finding in the CLI's JSON shape (1-based
lines, columns in code points), or ``{"error": "…"}`` when the check cannot run (no sbatch on
the editor's PATH, no answer in time, a document that is not a job script). It runs only when
the user invokes the command, off the event loop.
"""
from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

from ..live import LiveError, check
from ..output import to_json_obj

COMMAND = "sbatch-lsp.liveCheck"


def register(server) -> None:
    """Register :data:`COMMAND` on ``server`` (an :class:`SbatchLanguageServer`)."""

    @server.command(COMMAND)
    async def live_check(ls, *args) -> dict[str, Any]:  # pygls 2 passes the arguments spread
        uri = args[0] if args and isinstance(args[0], str) else None
        if uri is None:
            return {"error": "no document given"}
        if uri not in ls.workspace.text_documents:
            return {"error": f"{uri} is not open"}
        linted = await ls.linted(uri)
        if linted.result.job is None:
            return {"error": "not a job script (no #SBATCH line): nothing to ask the controller"}
        doc = ls.workspace.get_text_document(uri)
        path = doc.path if uri.startswith("file:") else uri
        try:
            diag = await asyncio.to_thread(check, linted.text, path, linted.config,
                                           linted.result)
        except LiveError as exc:
            return {"error": str(exc)}
        shown = to_json_obj(replace(linted.result, diagnostics=[diag]), path)
        return {"finding": shown[0]}
