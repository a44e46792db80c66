"""A progress bar: tqdm when it is installed, else one plain status line on stderr."""

import sys
import time


class Progress:
    def __init__(self, total, desc):
        self.total, self.desc, self.done = total, desc, 0
        self._last = 0.0
        try:
            from tqdm import tqdm
            self._bar = tqdm(total=total, desc=desc, unit="job")
        except ImportError:
            self._bar = None

    def update(self, note=""):
        self.done += 1
        if self._bar is not None:
            self._bar.update(1)
            if note:
                self._bar.set_postfix_str(note)
            return
        now = time.monotonic()
        if now - self._last >= 1.0 or self.done == self.total:  # at most a line a second
            self._last = now
            end = "\r" if sys.stderr.isatty() and self.done < self.total else "\n"
            sys.stderr.write("%s: %d/%d %s%s" % (self.desc, self.done, self.total, note, end))
            sys.stderr.flush()

    def close(self):
        if self._bar is not None:
            self._bar.close()
