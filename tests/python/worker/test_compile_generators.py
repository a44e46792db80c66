"""A real torch.compile beside a seeded draw in another thread: Dynamo sets torch's generators
back when its compile ends, and in the trusted worker that goes through the setters
inputs.guard_generator_restores makes wait for the seeded draws (test_worker.py has the stand-in
for Dynamo; this checks that Dynamo of the torch in use calls those setters)."""
import threading
import time

import pytest
import torch

from kjudge_protocol import inputs as kin

pytestmark = pytest.mark.skipif(not hasattr(torch, "compile"), reason="torch < 2.0 has no torch.compile")


def plus_one(x):
    return torch.relu(x) + 1


def test_a_compiles_generator_restore_waits_for_another_threads_seeded_draw():
    kin.guard_generator_restores()
    torch._dynamo.reset()
    with kin.seeded(5):
        expected = torch.rand(2000)
    inside, drawn, left = threading.Event(), [], []

    def draw():
        with kin.seeded(5):
            first = torch.rand(1000)
            inside.set()
            time.sleep(1.0)  # the compile saves the generators, compiles and sets them back in here
            drawn.append(torch.cat([first, torch.rand(1000)]))
            left.append(time.monotonic())

    other = threading.Thread(target=draw)
    other.start()
    assert inside.wait(10)
    assert torch.equal(torch.compile(plus_one, backend="eager")(torch.zeros(4)), torch.ones(4))
    returned = time.monotonic()
    other.join()
    assert torch.equal(drawn[0], expected)
    assert returned >= left[0]  # its setting back waited for the draw (unguarded, it returned within it)
