"""The port of each student's server. JupyterHub's spawners take a random one by binding port 0 and letting it go
(jupyterhub.utils.random_port); the server binds it a few seconds later. A class starting at once hands out many
ports that way (and each kernel takes five more the same way), so two can be handed the same one: the second server
then cannot start ("no available port could be found"), and the hub, finding the first student's server at that
port, takes it for the second's and sends them there (404 for every request of theirs). The ports here lie below
the range that binding port 0 and outgoing connections draw from (Linux: 32768-60999), one per student for as long
as the hub runs, each checked free before it is given."""

import socket

FIRST, LAST = 20000, 32000  # below Linux's default ip_local_port_range (/proc/sys/net/ipv4/ip_local_port_range)

_given = {}  # user name -> the port their server was given


def free(port, ip="127.0.0.1"):
    """Whether a server could bind `port` now (with SO_REUSEADDR, as Jupyter's server binds: a port that a stopped
    server leaves in TIME_WAIT is free)."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((ip or "127.0.0.1", port))
        except OSError:
            return False
    return True


def assign(spawner):
    """For Spawner.pre_spawn_hook: the student's server port. The one they had, where it is still free; else the first
    free one that no other student was given."""
    name, ip = spawner.user.name, spawner.ip
    port = _given.get(name)
    if port is None or not free(port, ip):
        others = {p for n, p in _given.items() if n != name}
        port = next((p for p in range(FIRST, LAST) if p not in others and free(p, ip)), 0)  # 0: JupyterHub's own
        _given[name] = port
    spawner.port = port
    return port
