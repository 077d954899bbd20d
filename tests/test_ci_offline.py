"""The fast part (the README's test command) needs no network: .ci/run runs it in a network namespace of its own,
and this test, run there, proves the namespace was in effect; a test that reaches the network fails in CI."""
from __future__ import annotations

import errno
import os
import re
import socket
from pathlib import Path

import pytest

from envdoctor.default_index import default_index_hosts

REPO = Path(__file__).resolve().parent.parent


def test_ci_runs_the_readme_test_command_with_the_network_cut():
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    line = re.search(r"<!-- test:begin -->\s*```sh\n(.*?)```", readme, re.S).group(1).strip()
    body = re.search(r"^fast_part\(\) \{\n(.*?)^\}", ci, re.S | re.M)
    assert body, ".ci/run defines no fast_part function"
    assert line in body.group(1), "the README's test command is not what fast_part runs"
    assert re.search(r"unshare --net\b.*fast_part", ci), "fast_part is not run in a network namespace"
    # the distribution's own python3 makes the test venv, as a user following the README on Debian does
    assert re.search(r'^SYS_PY=/usr/bin/python3$', ci, re.M)
    assert '"$SYS_PY" -m venv .ci-venv/test' in ci


@pytest.mark.skipif(os.environ.get("ENVDOCTOR_TEST_NETWORK_CUT") != "1",
                    reason="run by .ci/run in a network namespace (ENVDOCTOR_TEST_NETWORK_CUT=1)")
def test_the_fast_part_runs_in_a_namespace_without_network():
    # only the loopback device exists, and it is up (the tests' local index servers listen on 127.0.0.1)
    # (asked of the kernel for this process's namespace: /sys/class/net shows the namespace sysfs was mounted in)
    assert [name for _index, name in socket.if_nameindex()] == ["lo"]
    with socket.create_server(("127.0.0.1", 0)) as server:
        socket.create_connection(server.getsockname(), timeout=5).close()
    # the default package index is unreachable because there is no route, not because it is slow or refuses
    hosts = sorted(default_index_hosts())
    assert hosts, "pip names no default index"
    for host in hosts:
        try:
            addresses = socket.getaddrinfo(host, 443, type=socket.SOCK_STREAM)
        except socket.gaierror:
            continue  # no name service either: nothing to connect to
        for family, kind, proto, _name, address in addresses:
            with socket.socket(family, kind, proto) as sock:
                sock.settimeout(5)
                with pytest.raises(OSError) as failed:
                    sock.connect(address)
                assert failed.value.errno in (errno.ENETUNREACH, errno.EHOSTUNREACH, errno.EADDRNOTAVAIL)
