"""Each student's server port (hub/ports.py): one per student, below the ports that binding port 0 hands out, never
one in use. JupyterHub's own choice (bind port 0, let go) can give two servers of a class starting at once the same
port, and the second student's requests then go to the first one's server."""

import socket
import types

import pytest

from hub import ports


def spawner(name):
    return types.SimpleNamespace(user=types.SimpleNamespace(name=name), ip="127.0.0.1", port=0)


@pytest.fixture(autouse=True)
def no_ports_given(monkeypatch):
    monkeypatch.setattr(ports, "_given", {})


def test_each_student_has_a_port_of_their_own_below_the_ephemeral_range():
    given = [ports.assign(spawner(name)) for name in ("ada", "bo", "cy", "di")]
    assert len(set(given)) == 4
    with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
        ephemeral_low = int(f.read().split()[0])
    assert all(ports.FIRST <= p < min(ports.LAST, ephemeral_low) for p in given), given


def test_a_student_keeps_their_port_and_a_port_in_use_is_passed_over():
    ada = spawner("ada")
    first = ports.assign(ada)
    assert ports.assign(spawner("ada")) == first  # a restart of ada's server: the same port
    with socket.socket() as held:  # another program takes the next port before bo's server starts
        held.bind(("127.0.0.1", first + 1))
        held.listen()
        bo = ports.assign(spawner("bo"))
        assert bo not in (first, first + 1) and not ports.free(first + 1)
    with socket.socket() as held:  # ada's port taken while her server was down: she gets another
        held.bind(("127.0.0.1", first))
        held.listen()
        assert ports.assign(spawner("ada")) not in (first, bo)
