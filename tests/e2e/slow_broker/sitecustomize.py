"""Widens the window of DVC's filesystem-broker race, for tests/e2e/test_dvc_queue.py.

kombu's filesystem transport writes a message by creating its file, then writing the bytes; a
reader that moves and reads the file in between gets b"" and `json.loads` raises. On this
directory of PYTHONPATH, with SLOW_BROKER_WRITES=<seconds>, every reply message (the answers to
`celery inspect`, which each queue worker's idle monitor sends every 10 s) stays empty for that
long before its bytes land: the race that a loaded machine hits now and then, made certain.
"""

import os

_DELAY = float(os.environ.get("SLOW_BROKER_WRITES") or 0)

if _DELAY > 0:
    import inspect
    import time
    import uuid

    from kombu.transport import filesystem
    from kombu.utils.encoding import str_to_bytes
    from kombu.utils.json import dumps

    # What follows restates kombu's own _put (5.x) with a pause in it: a kombu that writes its
    # messages another way makes this fail loudly, not test something else.
    _SIGNATURE = "(self, queue, payload, **kwargs)"
    if str(inspect.signature(filesystem.Channel._put)) != _SIGNATURE:
        raise RuntimeError(f"kombu's filesystem Channel._put is no longer {_SIGNATURE}")

    def _put(self, queue, payload, **kwargs):
        name = f"{round(time.monotonic() * 1000)}_{uuid.uuid4()}.{queue}.msg"
        with open(os.path.join(self.data_folder_out, name), "wb", buffering=0) as fh:
            filesystem.lock(fh, filesystem.LOCK_EX)
            try:
                if "reply" in queue:
                    time.sleep(_DELAY)
                fh.write(str_to_bytes(dumps(payload)))
            finally:
                filesystem.unlock(fh)

    filesystem.Channel._put = _put
