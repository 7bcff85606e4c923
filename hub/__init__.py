"""A class on one server with JupyterHub: its config (jupyterhub_config.py), what it starts for each student
(singleuser.py), each student's share of the server (limits.py) and server port (ports.py), and the instructor's
grading (collect.py)."""
