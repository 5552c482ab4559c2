"""Request and session ids from the pooled randomness (api/random_ids.py): fresh, unique, and not shared with a
forked worker."""

import os
import uuid

from api.random_ids import RandomPool, random_hex
from api.selection.sessions import new_session_id


def test_the_pool_hands_out_every_byte_once_across_refills():
    pool = RandomPool(block=64)
    taken = [pool.take(16) for _ in range(200)]  # 50 refills
    assert all(len(b) == 16 for b in taken) and len(set(taken)) == len(taken)
    assert len(pool.take(100)) == 100  # more than a block at once


def test_request_ids_look_like_uuid4_hex_and_do_not_repeat():
    ids = [random_hex(16) for _ in range(5000)]
    assert len(set(ids)) == len(ids)
    assert all(len(i) == 32 and int(i, 16) >= 0 for i in ids[:50])


def test_session_ids_keep_the_uuid7_layout():
    for sid in (new_session_id() for _ in range(1000)):
        parsed = uuid.UUID(sid)
        assert str(parsed) == sid and parsed.version == 7 and parsed.variant == uuid.RFC_4122


def test_a_forked_worker_does_not_reuse_its_parents_bytes():
    random_hex(1)  # the parent's pool holds unused bytes now
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report its next ids and leave at once
        os.close(read)
        os.write(write, (random_hex(16) + new_session_id()).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as fh:
        child = fh.read()
    os.waitpid(pid, 0)
    parent = random_hex(16) + new_session_id()
    assert len(child) == len(parent) and child[:32] != parent[:32] and child[-17:] != parent[-17:]
