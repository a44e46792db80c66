"""kjudge: a judge for GPU kernels — Python client.

``kjudge.v1`` holds the generated protobuf modules (the wire contract); ``kjudge.keys`` the Redis
key names; ``kjudge.client.Client`` submits jobs and waits for results. The client (and redis-py)
is imported lazily so that ``kjudge.v1`` stays usable where redis-py is not installed.
"""

__all__ = ["Client", "QueueError", "QueueFull", "keys"]


def __getattr__(name):
    if name == "keys":
        import importlib

        return importlib.import_module("kjudge.keys")
    if name in ("Client", "QueueError", "QueueFull"):
        from kjudge import client

        return getattr(client, name)
    raise AttributeError("module 'kjudge' has no attribute %r" % name)
