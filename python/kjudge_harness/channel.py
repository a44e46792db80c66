"""The candidate's side of its job channel to the trusted worker (kjudge_worker.job): input sets
come in as shared device memory (GPU: VMM mapped read-only; CPU: a sealed memfd mapped
copy-on-write), outputs go out the same way. Nothing comes back but "received"."""
import os
import socket

from kjudge_protocol import transport, wire


class ChannelError(RuntimeError):
    pass


class Channel:
    def __init__(self, path, device):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET | socket.SOCK_CLOEXEC)
        self.sock.connect(path)
        self.device = device
        self.holders = {}  # set index -> holders of its mapped inputs

    def call(self, msg, fds=()):
        wire.send(self.sock, msg, fds)
        reply, got = wire.recv(self.sock)
        if reply is None:
            raise ChannelError("the worker closed the job channel")
        if not reply.get("ok"):
            for fd in got:
                os.close(fd)
            raise ChannelError(f"{msg.get('op')}: {reply.get('error')}")
        return reply, got

    def inputs(self, k, writable=False):
        """Set k's arguments; tensors are shared copies made for this process."""
        self.release(k)
        reply, fds = self.call({"op": "inputs", "set": k, "writable": writable})
        fds = list(fds)
        values, holders = [], []
        for desc in reply["values"]:
            if "tensor" in desc:
                if not fds:
                    raise ChannelError("the worker sent fewer buffers than tensors")
                t, holder = transport.open_shared(fds.pop(0), desc["tensor"], self.device,
                                                  "own" if writable else "input")
                values.append(t)
                holders.append(holder)
            else:
                values.append(desc["value"])
        self.holders[k] = holders
        return values

    def release(self, k):
        for h in self.holders.pop(k, []):
            if h is not None:
                h.close()

    def send_output(self, op, key, out, desc):
        msg = {"op": op, "desc": desc, ("set" if op == "output" else "call"): key}
        if out is None:
            self.call(msg)
            return
        if out.device != self.device and not (out.device.type == self.device.type == "cuda"):
            out = out.to(self.device)  # an output on another device is compared as its values
        fd, holder = transport.export(out)
        try:
            self.call(msg, [fd])
        finally:
            os.close(fd)
            if holder is not None:
                holder.close()

    def lock(self, shared=False):
        """The node's GPU lock, held by the worker for this process: exclusive around the timed
        loop, shared around correctness calls and the trace (they wait for other jobs' loops)."""
        self.call({"op": "lock", "shared": bool(shared)})

    def unlock(self):
        self.call({"op": "unlock"})

    def close(self):
        for k in list(self.holders):
            self.release(k)
        self.sock.close()
