"""One making of a value several jobs ask for at once (a problem's reference model, a baseline's
timing): the first job makes it, the others wait for it and take it. A making that failed is made
again by the next job that asks (its own error is its own). The waits are the asking prepare's
waits for other jobs (waits.py), never its reference's time."""
import collections
import threading

from .waits import waiting


class Flight:
    def __init__(self):
        self.done = threading.Event()
        self.ok = False
        self.value = None

    def wait(self):
        if not self.done.is_set():
            with waiting():
                self.done.wait()
        return self.ok, self.value


class SingleFlight:
    def __init__(self, kept=0):
        """kept: how many finished values stay for later askers (0: only jobs that asked while it
        was made share it), the oldest going first."""
        self.kept = kept
        self.lock = threading.Lock()
        self.flights = collections.OrderedDict()  # key -> Flight

    def once(self, key, make):
        """(make()'s value, whether another job made it)."""
        with self.lock:
            flight = self.flights.get(key)
            mine = flight is None
            if mine:
                flight = self.flights[key] = Flight()
        if not mine:
            ok, value = flight.wait()
            return (value, True) if ok else self.once(key, make)
        try:
            flight.value = make()
            flight.ok = True
            return flight.value, False
        finally:
            flight.done.set()
            self.settle(key, flight)

    def settle(self, key, flight):
        with self.lock:
            if (not flight.ok or not self.kept) and self.flights.get(key) is flight:
                del self.flights[key]
            while len(self.flights) > self.kept and self.flights:
                oldest = next(iter(self.flights))
                if not self.flights[oldest].done.is_set():
                    break  # a making in progress stays until it is done
                del self.flights[oldest]
