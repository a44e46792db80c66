"""Environment variables set for the length of one load_inline call (what nvcc and load_inline's
ninja file read), and put back as they were after it."""
import contextlib
import os


@contextlib.contextmanager
def scoped_env(**values):
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, old in saved.items():
            if old is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = old
