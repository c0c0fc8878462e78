"""Servers that stand in for Redis where a real one cannot be made to answer
what a test needs: a RESP server whose every answer the test scripts (a
reply, an error reply, the connection closed, no answer), and a port that
accepts connections and never answers (a black hole).

The clients under test talk to them through their real code: redis-py's
connections and parsers, the drivers, the core. The handshake redis-py
sends on connect (HELLO, CLIENT SETINFO, SELECT...) is answered and not
recorded."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable
from typing import Any


class Error:
    """An error reply, as the server would send it."""

    def __init__(self, message: str) -> None:
        self.message = message


CLOSE = object()  # close the connection instead of answering
SILENT = object()  # never answer

Handler = Callable[[list[str]], Any]
HANDSHAKE = {"HELLO", "CLIENT", "SELECT", "AUTH", "PING"}


def encode(value: Any, resp3: bool = False) -> bytes:
    """``value`` in RESP2, or RESP3 where they differ (nil)."""
    if isinstance(value, Error):
        return f"-{value.message}\r\n".encode()
    if value is None:
        return b"_\r\n" if resp3 else b"$-1\r\n"
    if isinstance(value, bool):
        raise TypeError(f"no RESP form for {value!r} here")
    if isinstance(value, dict) and set(value) == {"resp3_map"}:
        # A RESP3 map (the contract's {"resp3_map": [name, value, ...]}).
        flat = value["resp3_map"]
        return b"%%%d\r\n" % (len(flat) // 2) + b"".join(encode(v, resp3) for v in flat)
    if isinstance(value, int):
        return f":{value}\r\n".encode()
    if isinstance(value, str):
        value = value.encode()
    if isinstance(value, bytes):
        return b"$%d\r\n%s\r\n" % (len(value), value)
    if isinstance(value, (list, tuple)):
        return b"*%d\r\n" % len(value) + b"".join(encode(v, resp3) for v in value)
    raise TypeError(f"no RESP form for {value!r}")


class _Reader:
    """RESP arrays of bulk strings (the commands a client sends), from a socket."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buffer = b""

    def _line(self) -> bytes | None:
        while b"\r\n" not in self.buffer:
            chunk = self.sock.recv(65536)
            if not chunk:
                return None
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\r\n", 1)
        return line

    def _exactly(self, n: int) -> bytes | None:
        while len(self.buffer) < n + 2:
            chunk = self.sock.recv(65536)
            if not chunk:
                return None
            self.buffer += chunk
        data, self.buffer = self.buffer[:n], self.buffer[n + 2 :]
        return data

    def command(self) -> list[str] | None:
        line = self._line()
        if line is None:
            return None
        assert line.startswith(b"*"), line
        args = []
        for _ in range(int(line[1:])):
            head = self._line()
            if head is None:
                return None
            data = self._exactly(int(head[1:]))
            if data is None:
                return None
            args.append(data.decode())
        return args


class FakeRedis:
    """A RESP server on a free loopback port, a thread per connection;
    ``handler(args)`` answers each command (a value, an ``Error``,
    ``CLOSE`` or ``SILENT``); ``commands`` are those received, in order."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.commands: list[list[str]] = []
        self.connections = 0
        self._listener = socket.socket()
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        self.port: int = self._listener.getsockname()[1]
        self._open: list[socket.socket] = []
        self._stopped = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._stopped.is_set():
            try:
                sock, _ = self._listener.accept()
            except OSError:
                return
            self.connections += 1
            self._open.append(sock)
            threading.Thread(target=self._serve, args=(sock,), daemon=True).start()

    def _serve(self, sock: socket.socket) -> None:
        reader = _Reader(sock)
        resp3 = False
        try:
            while True:
                args = reader.command()
                if args is None:
                    return
                if args[0].upper() == "HELLO" and len(args) > 1:
                    resp3 = args[1] == "3"
                if args[0].upper() in HANDSHAKE:
                    sock.sendall(self._handshake(args))
                    continue
                self.commands.append(args)
                answer = self.handler(args)
                if answer is CLOSE:
                    sock.close()
                    return
                if answer is SILENT:
                    self._stopped.wait()
                    return
                sock.sendall(encode(answer, resp3))
        except OSError:
            return

    @staticmethod
    def _handshake(args: list[str]) -> bytes:
        name = args[0].upper()
        if name == "HELLO":
            # redis-py 8 speaks RESP3 and checks the protocol it was granted.
            return b"%1\r\n$5\r\nproto\r\n:" + args[1].encode() + b"\r\n" if len(args) > 1 else b"%0\r\n"
        return b"+PONG\r\n" if name == "PING" else b"+OK\r\n"

    def close(self) -> None:
        self._stopped.set()
        self._listener.close()
        for sock in self._open:
            try:
                sock.close()
            except OSError:
                pass

    def __enter__(self) -> FakeRedis:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class BlackHole:
    """A port that accepts connections (the kernel completes them up to
    the backlog) and never answers: a server that vanished behind a
    firewall that drops, or a frozen proxy."""

    def __init__(self) -> None:
        self._listener = socket.socket()
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(128)
        self.port: int = self._listener.getsockname()[1]

    def close(self) -> None:
        self._listener.close()

    def __enter__(self) -> BlackHole:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
