"""Paddock's Python SDK: boxes on your own Paddock server, in the shape
of hosted sandboxes.

    from paddock import Box
    box = Box.create(type="small", ttl=3600)
    print(box.commands.run("uname -a").stdout)
    box.kill()
"""
from ._box import Box, BoxVolumes, Desktop, Entry, Files, Policy, Prompt, Volume
from ._client import Client, config_path, login
from ._commands import CommandHandle, CommandResult, Commands
from .aio import AsyncBox, AsyncCommandHandle, AsyncVolume
from ._errors import (AuthError, CommandTimeoutError, ConflictError, InvalidError,
                      NotFoundError, PaddockError, UnsafeArchiveError)

__version__ = "0.1.0"

__all__ = [
    "AsyncBox", "AsyncCommandHandle", "AsyncVolume", "AuthError", "Box", "BoxVolumes", "Client", "CommandHandle", "CommandResult",
    "CommandTimeoutError", "Commands", "ConflictError", "Desktop", "Entry", "Files",
    "InvalidError", "NotFoundError", "PaddockError", "Policy", "Prompt", "UnsafeArchiveError",
    "Volume", "config_path", "login",
]
