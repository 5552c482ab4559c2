"""Reading an upstream's body within bounds (issue 31): chunk by chunk as it arrives, its Content-Encoding undone
here, counted after inflating, and refused past SWITCHBOARD_GATEWAY_MAX_RESPONSE_BYTES. Inflating here rather than
in aiohttp: at most the bound is ever inflated (each step asks zlib for no more than what is left of it), and a body
given up is simply dropped, where aiohttp's decoder inflates everything it still holds when the connection closes
(a gzip bomb then cost the event loop 70-180 ms steps after its call had ended). Inflating goes in steps of
INFLATE_STEP bytes with the event loop served between them: 8 MiB of a gzip bomb take 60-70 ms of zlib here, which
as one step held every other request that long."""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import AsyncIterator, Iterator
from typing import Any

INFLATE_STEP = 256 * 1024  # bytes inflated per step of the event loop (about 2 ms of zlib)


class TooLarge(Exception):
    """An upstream answer past SWITCHBOARD_GATEWAY_MAX_RESPONSE_BYTES (counted after decompression)."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"the provider's answer passed {limit:,} bytes (SWITCHBOARD_GATEWAY_MAX_RESPONSE_BYTES)")


class BadEncoding(Exception):
    """A Content-Encoding the gateway did not offer (it asks for gzip or deflate), or a body that does not inflate."""


class Inflater:
    """One body's bytes as sent -> its bytes as meant, at most `limit` of them (TooLarge past it)."""

    def __init__(self, encoding: str | None, limit: int) -> None:
        name = (encoding or "identity").strip().lower()
        if name in ("", "identity"):
            self._zlib = None
        elif name in ("gzip", "x-gzip"):
            self._zlib = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif name == "deflate":
            self._zlib = zlib.decompressobj()
        else:
            raise BadEncoding(f"the provider answered in an encoding it was not offered ({name[:40]})")
        self.limit, self.total = limit, 0

    def pieces(self, chunk: bytes) -> Iterator[bytes]:
        """`chunk` undone, in pieces of at most INFLATE_STEP bytes (a piece that size: more may follow)."""
        if self._zlib is None:
            self._count(len(chunk))
            yield chunk
            return
        data = chunk
        while True:
            want = min(INFLATE_STEP, self.limit - self.total + 1)  # past what is left: TooLarge, never more
            try:
                out = self._zlib.decompress(data, want)
            except zlib.error as exc:
                raise BadEncoding(f"the provider's compressed answer did not inflate ({exc})") from None
            self._count(len(out))
            yield out
            data = self._zlib.unconsumed_tail
            if not data and len(out) < want:
                return

    def _count(self, size: int) -> None:
        self.total += size
        if self.total > self.limit:
            raise TooLarge(self.limit)


async def read_capped(response: Any, limit: int, refuse: bool = True) -> bytes:
    """The body, read as it arrives: past `limit` bytes, TooLarge (`refuse`) or the first `limit` bytes. A body
    declared larger (an uncompressed one's Content-Length) is refused before a byte of it is read."""
    encoding = response.headers.get("content-encoding")
    if refuse and (response.content_length or 0) > limit and not encoding:
        raise TooLarge(limit)
    inflater, body = Inflater(encoding, limit), bytearray()
    try:
        async for chunk in response.content.iter_any():
            for piece in inflater.pieces(chunk):
                body += piece
                if len(piece) == INFLATE_STEP:
                    await asyncio.sleep(0)  # let other requests run between steps of a large inflate
    except TooLarge:
        if refuse:
            raise
    return bytes(body[:limit])  # what is kept of an error's body: its beginning


async def lines(response: Any, limit: int = 8 << 20, deadline: float | None = None) -> AsyncIterator[bytes]:
    """The lines of a streaming body as bytes (the relay passes them on undecoded), however long up to `limit` bytes
    in all (TooLarge past it), each read ending by `deadline` (the event loop's clock; TimeoutError past it). Linear
    in the body: each chunk is searched once for its line ends, and a line's start is never rescanned (aiohttp's own
    line reader refuses lines over 128 KiB, and a large tool call's arguments can be one)."""
    inflater, pending = Inflater(response.headers.get("content-encoding"), limit), bytearray()
    while True:
        async with asyncio.timeout_at(deadline):
            raw = await response.content.readany()
        if not raw:
            break
        for chunk in inflater.pieces(raw):
            pending += chunk
            if b"\n" not in chunk:
                if len(chunk) == INFLATE_STEP:
                    await asyncio.sleep(0)  # let other requests run between steps of a large inflate
                continue
            end = pending.rfind(b"\n")  # within the new chunk: found scanning back over it only
            complete = bytes(pending[:end]).split(b"\n")
            del pending[: end + 1]
            for line in complete:
                yield line.rstrip(b"\r")
    if pending:
        yield bytes(pending)
