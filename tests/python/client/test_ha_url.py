"""redis+sentinel:// URLs in the Python client (kjudge.ha), as libkjqueue reads them
(tests/queue/url_test.cpp). The client against real sentinels: tests/cluster/test_cluster.py."""

import pytest

from kjudge import ha
from kjudge.client import Client, QueueError


def test_sentinel_url_names_sentinels_master_db_and_credentials():
    u = ha.parse_url("redis+sentinel://alice:s%40cret@10.0.0.1:26380,sent-b,[::1]:7000/kjudge/3")
    assert u["sentinels"] == [("10.0.0.1", 26380), ("sent-b", 26379), ("::1", 7000)]
    assert (u["master"], u["db"], u["username"], u["password"]) == ("kjudge", 3, "alice", "s@cret")
    assert ha.parse_url("redis+sentinel://h/m")["db"] == 0


@pytest.mark.parametrize("bad", ["redis+sentinel://h:1", "redis+sentinel://h:1/", "redis+sentinel:///m",
                                 "redis+sentinel://h:0/m", "redis+sentinel://h:x/m", "redis+sentinel://h:1/m/notadb"])
def test_bad_sentinel_urls_are_refused_readably(bad):
    with pytest.raises(QueueError, match="redis url"):
        Client(bad)


def test_no_sentinel_answering_is_a_queue_error_not_a_hang():
    c = Client("redis+sentinel://127.0.0.1:1/kjudge", failover_wait_s=0.5, connect_timeout_s=0.2)
    with pytest.raises(QueueError):
        c.get_result("t", "j")
