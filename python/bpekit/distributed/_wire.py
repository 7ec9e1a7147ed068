"""The local backend's wire: length-prefixed pickles over a worker's pipes."""

from __future__ import annotations

import pickle
import struct
from typing import IO, Any

HEADER = struct.Struct("<Q")


def send(stream: IO[bytes], obj: Any) -> None:
    """Writes one length-prefixed pickle."""
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(HEADER.pack(len(data)))
    stream.write(data)
    stream.flush()


def receive(stream: IO[bytes]) -> Any:
    """Reads one length-prefixed pickle; ``EOFError`` at the end of the stream."""
    header = stream.read(HEADER.size)
    if len(header) < HEADER.size:
        raise EOFError("the stream ended")
    (size,) = HEADER.unpack(header)
    data = stream.read(size)
    if len(data) < size:
        raise EOFError("the stream ended inside a message")
    return pickle.loads(data)
