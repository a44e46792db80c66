"""Framing of the job channel (worker <-> candidate): one JSON object per SOCK_SEQPACKET
message, file descriptors attached with SCM_RIGHTS. Shared by both ends."""
import json
import socket
import traceback

MAX_MESSAGE = 1 << 20
MAX_FDS = 64


def send(sock, obj, fds=()):
    data = json.dumps(obj).encode()
    if fds:
        socket.send_fds(sock, [data], list(fds))
    else:
        sock.send(data)


def recv(sock):
    """(message, fds); (None, []) at end of stream."""
    data, fds, _flags, _addr = socket.recv_fds(sock, MAX_MESSAGE, MAX_FDS)
    if not data:
        for fd in fds:
            _close(fd)
        return None, []
    try:
        msg = json.loads(data)
    except ValueError:
        msg = None
    if not isinstance(msg, dict):
        for fd in fds:
            _close(fd)
        raise ValueError("a channel message is not a JSON object")
    return msg, fds


def _close(fd):
    import os
    try:
        os.close(fd)
    except OSError:
        pass


def error_text(exc, limit=4000):
    """An exception with its traceback, the last `limit` characters: how either side reports its own
    failure to kjudged."""
    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))[-limit:]
