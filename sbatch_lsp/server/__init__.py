"""``sbatch-lsp``: the language server face of the engine (the only module that imports pygls).

    sbatch-lsp [--stdio]            # stdio (the default; VS Code's client passes --stdio)
    sbatch-lsp --tcp HOST:PORT      # for debugging
"""
from __future__ import annotations

import argparse
import logging
import os
import sys


class _Formatter(logging.Formatter):
    """One line per record: an exception is shown as ``Type: message`` (its traceback only at
    ``--log-level DEBUG``), so a client that sends bad JSON or drops the connection does not
    fill the editor's log with pygls' and asyncio's tracebacks."""

    def __init__(self, fmt: str, tracebacks: bool):
        super().__init__(fmt)
        self.tracebacks = tracebacks

    def format(self, record: logging.LogRecord) -> str:
        """The record as one line (a traceback only at DEBUG), every secret in it masked: the
        token formats, and the values the open documents' lints found (pygls logs whole
        messages, document texts included, at DEBUG)."""
        if self.tracebacks or not record.exc_info:
            text = super().format(record)
        else:
            exc = record.exc_info[1]
            line = logging.LogRecord(record.name, record.levelno, record.pathname, record.lineno,
                                     f"{record.getMessage()} ({type(exc).__name__}: {exc})",
                                     None, None)
            text = super().format(line)
        app = sys.modules.get(f"{__name__}.app")  # the documents whose secrets are known
        server = getattr(app, "server", None)
        if server is None:
            from ..secrets import Masker, find_secrets

            return Masker.of(text, find_secrets(text)).text(text)
        return server.documents.masker(text).text(text)


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``sbatch-lsp`` and ``python -m sbatch_lsp.server``; returns the exit code."""
    from .. import __version__

    p = argparse.ArgumentParser(prog="sbatch-lsp",
                                description="Language server for Slurm batch scripts.")
    p.add_argument("--stdio", action="store_true", help="talk over stdin/stdout (the default)")
    p.add_argument("--tcp", metavar="HOST:PORT", help="listen on a TCP port instead")
    p.add_argument("--log-level", default="WARNING",
                   choices=("DEBUG", "INFO", "WARNING", "ERROR"), help="log level (on stderr)")
    p.add_argument("--version", action="version", version=f"sbatch-lsp {__version__}")
    args = p.parse_args(argv)
    if args.tcp is not None:
        host, _, port = args.tcp.rpartition(":")
        if not host or not port.isdigit():
            p.error("--tcp: expected HOST:PORT, e.g. 127.0.0.1:2087")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_Formatter("sbatch-lsp %(levelname)s %(name)s: %(message)s",
                                    tracebacks=args.log_level == "DEBUG"))
    logging.basicConfig(level=args.log_level, handlers=[handler])
    from ..shell.parse import use_fragments
    from .app import server

    use_fragments(True)  # every version of a document is linted: unchanged chunks are copied

    if args.tcp is not None:
        server.start_tcp(host, int(port))
    else:
        server.start_io()
    # LSP: exit code 0 after a shutdown request, 1 otherwise. Leave at once: the stdin reader
    # thread may still be blocked in a read that only the client's closing would end.
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # pygls closed it on exit
            pass
    os._exit(0 if server.shut_down else 1)
