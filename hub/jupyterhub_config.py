"""JupyterHub for a class on one server: `make hub` (or `jupyterhub -f hub/jupyterhub_config.py`). README "Run a
class" says how to start it, how students log in and how to grade them. Set with environment variables:

  LABKIT_HUB_MODE      homes (default): the hub's own account runs every student's JupyterLab, each with a home
                       of its own under $LABKIT_HUB_STATE/homes/<name> (students can log in with any name, or one of
                       LABKIT_STUDENTS, and the class password). Quick to start, but the students share one Unix
                       account: their files are apart, not protected from one another (JupyterHub's
                       SimpleLocalProcessSpawner).
                       unix: each student is a Unix user of the server and logs in with their own password (PAM);
                       JupyterLab runs as that user in their own home (LocalProcessSpawner). Start the hub as root.
  LABKIT_STUDENTS      a file of student names, one a line: only they may log in (default: students.txt of the
                       class folder if there is one, else anyone with the password)
  LABKIT_CLASS_DIR     the instructor's class folder, mode 0700: roster, submissions, grades (default ~/.labkit-class)
  LABKIT_ADMIN         the hub's admin users, the instructor (default: the user who runs the hub); in homes mode they
                       log in with LABKIT_HUB_ADMIN_PASSWORD (default: made, kept in $LABKIT_HUB_STATE/admin_password)
  LABKIT_CLASS_SIZE    how many students build at once, for each one's share of the server (default: the names in
                       LABKIT_STUDENTS, else 30)
  LABKIT_HUB_PASSWORD  the class password (homes mode; at least 8 characters); default: made on the first start,
                       kept in $LABKIT_HUB_STATE/password and printed in the log
  LABKIT_HUB_STATE     the hub's folder: its database, cookie secret, passwords, the hand-out, the class's compiler
                       cache (compiler-cache/, which students read) and (homes mode) the homes; default .hub/ in the kit
  LABKIT_HUB_WARM      1 (default): at each start, compile every op and exercise of the hand-out into that cache in
                       the background (kit/warm.py; its log: warm.log there); 0: do not; names, comma-separated
                       (add2,elu): those alone, for a class that needs only them today

Each student's server starts with hub/singleuser.py (their copy of the kit, their build folder, a memory limit per
process) and MAX_JOBS and OMP_NUM_THREADS from hub/limits.py: their share of this server for the class size."""

import getpass
import os
import secrets
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from hub import classroom, limits, ports, singleuser  # noqa: E402 (hub/classroom.py, limits.py ... beside this file)

c = get_config()  # noqa: F821 (JupyterHub defines it for its config file)

HERE = Path(__file__).resolve().parent
MODE = os.environ.get("LABKIT_HUB_MODE", "homes")
STATE = Path(os.environ.get("LABKIT_HUB_STATE") or HERE.parent / ".hub").resolve()
STATE.mkdir(parents=True, exist_ok=True)
students_file = classroom.roster()
STUDENTS = set(students_file.read_text().split()) if students_file else set()
ADMINS = set(os.environ.get("LABKIT_ADMIN", "").replace(",", " ").split()) or {getpass.getuser()}
CLASS_SIZE = int(os.environ.get("LABKIT_CLASS_SIZE") or len(STUDENTS) or 30)

c.JupyterHub.db_url = f"sqlite:///{STATE / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(STATE / "jupyterhub_cookie_secret")
c.ConfigurableHTTPProxy.pid_file = str(STATE / "jupyterhub-proxy.pid")
# the Python configurable-http-proxy (PyPI), installed beside this Python: no Node.js
proxy = Path(sys.executable).parent / "configurable-http-proxy"
if proxy.exists():
    c.ConfigurableHTTPProxy.command = [str(proxy)]

c.Authenticator.admin_users = ADMINS  # the instructor: the hub's admin page (/hub/admin), every student's server
if STUDENTS:
    c.Authenticator.allowed_users = STUDENTS
else:
    c.Authenticator.allow_all = True

if MODE == "homes":
    password = os.environ.get("LABKIT_HUB_PASSWORD")
    saved = STATE / "password"
    if not password:
        if not saved.exists():
            saved.write_text(secrets.token_urlsafe(9) + "\n")
            saved.chmod(0o600)
        password = saved.read_text().strip()
        print(f"[labkit hub] the class password is {password} (in {saved})", file=sys.stderr)
    c.JupyterHub.authenticator_class = "shared-password"
    c.SharedPasswordAuthenticator.user_password = password
    # the admins log in with a password of their own, never the class one (JupyterHub wants 32 characters or more)
    admin_password = os.environ.get("LABKIT_HUB_ADMIN_PASSWORD")
    saved = STATE / "admin_password"
    if not admin_password:
        if not saved.exists():
            saved.write_text(secrets.token_urlsafe(24) + "\n")
            saved.chmod(0o600)
        admin_password = saved.read_text().strip()
    c.SharedPasswordAuthenticator.admin_password = admin_password
    print(f"[labkit hub] admin {', '.join(sorted(ADMINS))}: log in with the password in {saved}", file=sys.stderr)
    c.JupyterHub.spawner_class = "simple"  # jupyterhub.spawner.SimpleLocalProcessSpawner: homes, one account
    c.SimpleLocalProcessSpawner.home_dir_template = str(STATE / "homes" / "{username}")
    if os.getuid() == 0:
        c.Spawner.args = ["--allow-root"]  # the servers run as the hub's user: here root
elif MODE == "unix":
    c.JupyterHub.authenticator_class = "pam"
    c.JupyterHub.spawner_class = "localprocess"  # each student's server as their own Unix user, in their home

    def private_home(spawner):
        """The student's home readable by them alone, before their server starts (singleuser.py does it too)."""
        import pwd

        home = Path(pwd.getpwnam(spawner.user.name).pw_dir)
        if home.is_dir():
            home.chmod(0o700)

else:
    raise ValueError(f"LABKIT_HUB_MODE={MODE!r}: use homes or unix")

# what students get: the kit's committed files, made afresh at each start (hub/classroom.py); a student's copy is made
# from it on their first start only
HANDOUT = classroom.make_handout(STATE / "handout", HERE.parent)
STATE.chmod(0o711)  # the students' own accounts (unix mode) reach the hand-out by name, list nothing
if classroom.is_git_checkout(HERE.parent):
    changed, new = classroom.changed_files(HERE.parent), classroom.new_files(HERE.parent)
    if changed:
        print(
            f"[labkit hub] WARNING: {len(changed)} handed-out files have changes not committed; students get the "
            f"committed version (commit them if students should have yours): {', '.join(changed)}",
            file=sys.stderr,
        )
    if new:
        print(
            f"[labkit hub] note: {len(new)} files git does not track are not handed out: {', '.join(new)}",
            file=sys.stderr,
        )


def before_spawn(spawner):
    """Each student's server port, one no other student was given (hub/ports.py: the spawner's own random port can
    be handed to two servers at once); in unix mode, their home private."""
    ports.assign(spawner)
    if MODE == "unix":
        private_home(spawner)


c.Spawner.pre_spawn_hook = before_spawn
c.Spawner.cmd = [sys.executable, str(HERE / "singleuser.py")]
c.Spawner.notebook_dir = "~"
c.Spawner.default_url = "/lab/tree/kit/notebooks/01_add2.ipynb"
env, mem_limit = limits.for_class(CLASS_SIZE)
# the kit's JupyterLab defaults, as `make lab` gives them: no "get notified about Jupyter news?" pop-up
env["JUPYTER_CONFIG_PATH"] = str(HERE.parent / ".jupyter")
env["LABKIT_HANDOUT"] = str(HANDOUT)
# one compiler cache for the class (building/compiler_cache.py): students read it, `make warm` fills it; the hub warms
# it from a copy of the hand-out laid out as a student's kit, in the background, at each start (log: warm.log)
CACHE = STATE / "compiler-cache"
CACHE.mkdir(mode=0o755, exist_ok=True)
env["LABKIT_CACHE_DIR"] = str(CACHE)
env["LABKIT_CACHE_READONLY"] = "1"
# what decides a build's GPU targets, as the hub was started with, for every student's server (the warm below has them
# with the rest of the hub's environment). JupyterHub hands a server little of its own environment (PATH, LANG and a
# few more), and a student's build without these would differ from the warm's (plain sm_90 where the hub's
# TORCH_CUDA_ARCH_LIST says 9.0a): no entry of the cache would serve it. The compiler is left out of both: the
# students build with the system's c++, and so does the warm (a $CXX of the hub's would be another compiler, or one
# the loader replaces with a note in every notebook).
BUILD_SETTINGS = ("TORCH_CUDA_ARCH_LIST", "CUDA_HOME", "CUDA_PATH", "PYTORCH_NVCC", "LABKIT_CUDA")
env.update({name: os.environ[name] for name in BUILD_SETTINGS if name in os.environ})
WARM = os.environ.get("LABKIT_HUB_WARM", "1")
if WARM != "0":
    warm_home = STATE / "warm"
    shutil.rmtree(warm_home / "kit", ignore_errors=True)
    warm_home.mkdir(exist_ok=True)
    warm_kit = singleuser.hand_out(warm_home, HANDOUT)
    # the warm compiles as a student's build will, so that the cache's entries are theirs: not in the hub's build
    # folder, with the system's c++ (above), and with the precompiled header and cache paths a student's loader takes
    # from LABKIT_CACHE_DIR alone (a LABKIT_PCH_DIR here would key every entry to what no student's build has)
    own = ("LABKIT_BUILD_DIR", "LABKIT_CACHE_READONLY", "LABKIT_PCH_DIR", "CXX", "CC")
    warm_env = {k: v for k, v in os.environ.items() if k not in own}
    names = [] if WARM == "1" else [n.strip() for n in WARM.split(",") if n.strip()]
    with open(STATE / "warm.log", "w") as warm_log:
        subprocess.Popen(
            [sys.executable, "-m", "kit.warm", *names],
            cwd=warm_kit,
            env={**warm_env, "LABKIT_CACHE_DIR": str(CACHE), "PYTHONPATH": classroom.python_path(warm_kit)},
            stdout=warm_log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
c.Spawner.environment = env
c.Spawner.mem_limit = mem_limit
# a whole class starting at once on a busy server: give each server time to come up
c.Spawner.start_timeout = 180
c.Spawner.http_timeout = 180
print(
    f"[labkit hub] {MODE} mode, class of {CLASS_SIZE}: each student MAX_JOBS={env['MAX_JOBS']}, "
    f"OMP_NUM_THREADS={env['OMP_NUM_THREADS']}, at most {mem_limit / limits.GiB:.1f} GiB per process",
    file=sys.stderr,
)
