#!/usr/bin/python3
"""state_ownership.py STATEBUS ROUTER SYCTL — the state plane belongs to the
daemons' user (DESIGN §9 "Region ownership"): the attacks of a local
unprivileged user, run as `nobody` with setpriv, are refused.

  a. a region file pre-created by nobody (empty and 0666, or a valid region
     nobody made) is refused by the statebus and by the router master with a
     message naming the fix, and left as it was;
  b. a symlink nobody planted at the region path (to a root-owned file), or at
     the control socket path, is refused and its target untouched; a socket
     nobody bound at the control path is refused too;
  c. a region the statebus or the router creates is 0640 and nobody cannot
     open it (read-write, nor read-only outside the group); with
     --shm-group nobody's group can read it and run syctl read-only, never
     open it for writing;
  d. the control socket is 0660: nobody cannot connect to it.

The daemons run as this test's user (root under tests/run); only the attacks
run as nobody. Everything lives in one fresh sticky, world-writable directory
under /dev/shm (like /dev/shm itself), removed at the end. Every wait polls
with a deadline. Run with /usr/bin/python3.
"""
import os
import pwd
import grp
import shutil
import stat
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sytest  # noqa: E402
from sytest import check, fail, free_port, wait_for  # noqa: E402

STATEBUS, ROUTER, SYCTL = sys.argv[1:4]
NOBODY = pwd.getpwnam("nobody").pw_uid
NOGROUP_NAME = grp.getgrgid(pwd.getpwnam("nobody").pw_gid).gr_name
NOGROUP = grp.getgrnam(NOGROUP_NAME).gr_gid
AS_NOBODY = ["setpriv", "--reuid=nobody", "--regid=%s" % NOGROUP_NAME, "--clear-groups"]
PY = "/usr/bin/python3"
D = tempfile.mkdtemp(prefix="sy-own-", dir="/dev/shm")
os.chmod(D, 0o1777)
procs = []


@sytest.on_fail
def _logs():
    sytest.print_dir_logs(D)


def nobody(code, *args):
    """Runs Python `code` as nobody; returns (rc, stdout + stderr)."""
    out = subprocess.run(AS_NOBODY + [PY, "-c", code] + list(args), capture_output=True,
                         text=True, timeout=20)
    return out.returncode, out.stdout + out.stderr


def nobody_ok(code, *args):
    rc, out = nobody(code, *args)
    check(rc == 0, "as nobody: rc %d: %s" % (rc, out))
    return out


def snapshot(path):
    st = os.lstat(path)
    data = b""
    if stat.S_ISREG(st.st_mode):
        with open(path, "rb") as f:
            data = f.read(1 << 16)
    return (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode), st.st_size, st.st_mtime_ns, data)


def run_refused(argv, name, want):
    """A daemon that must exit non-zero at start-up with `want` in its log."""
    log = os.path.join(D, name + ".log")
    with open(log, "w") as f:
        try:
            rc = subprocess.run(argv, stdout=f, stderr=f, timeout=20).returncode
        except subprocess.TimeoutExpired:
            fail("%s did not refuse (still running after 20 s)" % name)
    text = open(log, errors="replace").read()
    check(rc != 0, "%s: exit status 0, expected a refusal: %s" % (name, text))
    for w in want:
        check(w in text, "%s: message lacks %r: %s" % (name, w, text))
    return text


def statebus(shm, ctl, *extra):
    return [STATEBUS, "--shm", shm, "--control-endpoint", "ipc://" + ctl] + list(extra)


def router(shm, *extra):
    return [ROUTER, "--shm", shm, "--port", str(free_port()),
            "--worker-urls", "http://127.0.0.1:9"] + list(extra)


def start(argv, name):
    log = open(os.path.join(D, name + ".log"), "w")
    p = subprocess.Popen(argv, stdout=log, stderr=log)
    procs.append(p)
    return p


def stop(p):
    sytest.stop_procs([p])
    procs.remove(p)


def case_a_region_precreated_by_nobody():
    # empty, 0666, owned by nobody: the takeover of the issue
    shm = os.path.join(D, "a-empty")
    nobody_ok("import os,sys; fd=os.open(sys.argv[1], os.O_CREAT|os.O_EXCL|os.O_RDWR, 0o666);"
              "os.fchmod(fd, 0o666)", shm)
    before = snapshot(shm)
    check(before[0] == NOBODY and before[2] == 0o666, "setup: %r" % (before,))
    want = ["owned by uid %d" % NOBODY, "refusing to adopt it", "syctl destroy"]
    run_refused(statebus(shm, shm + ".ctl"), "a-statebus", want)
    run_refused(router(shm), "a-router", want)
    check(snapshot(shm) == before, "the planted file changed: %r → %r" % (before, snapshot(shm)))
    check(not os.path.exists(shm + ".ctl"), "a control socket was bound after the refusal")
    # a complete, valid region nobody initialised (its worker URLs are nobody's)
    shm = os.path.join(D, "a-valid")
    out = subprocess.run(AS_NOBODY + [SYCTL, "--shm", shm, "create", "--max-workers", "8"],
                         capture_output=True, text=True, timeout=20)
    check(out.returncode == 0, "setup: nobody's syctl create: %s" % out.stderr)
    before = snapshot(shm)
    check(before[0] == NOBODY and before[2] == 0o640, "setup: %r" % (before[:4],))
    run_refused(statebus(shm, shm + ".ctl"), "a-statebus-valid", want)
    run_refused(router(shm), "a-router-valid", want)
    check(snapshot(shm) == before, "nobody's valid region changed")


def case_b_planted_symlinks():
    target = os.path.join(D, "root-owned-target")
    with open(target, "wb") as f:
        f.write(b"root's data\n" * 100)
    os.chmod(target, 0o644)
    shm = os.path.join(D, "b-link")
    nobody_ok("import os,sys; os.symlink(sys.argv[1], sys.argv[2])", target, shm)
    check(os.lstat(shm).st_uid == NOBODY, "setup: the link is not nobody's")
    before = snapshot(target)
    run_refused(statebus(shm, shm + ".ctl"), "b-statebus", ["symlink", "refusing to follow it"])
    run_refused(router(shm), "b-router", ["symlink", "refusing to follow it"])
    check(snapshot(target) == before, "the symlink's target changed")
    check(os.path.islink(shm), "the planted link was replaced")
    # a symlink at the control socket path
    shm = os.path.join(D, "b-region")
    ctl = os.path.join(D, "b-region.ctl")
    nobody_ok("import os,sys; os.symlink(sys.argv[1], sys.argv[2])", target, ctl)
    run_refused(statebus(shm, ctl), "b-statebus-ctl", ["control socket", "is a symlink"])
    check(snapshot(target) == before, "the control link's target changed")
    check(os.path.islink(ctl), "the planted control link was replaced")
    # nobody's own listener at the control path
    ctl2 = os.path.join(D, "b-region2.ctl")
    nobody_ok("import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen()",
              ctl2)
    run_refused(statebus(shm, ctl2), "b-statebus-sock",
                ["control socket", "owned by uid %d" % NOBODY])
    check(os.lstat(ctl2).st_uid == NOBODY, "nobody's socket was replaced")


OPEN_AS_NOBODY = """
import os, sys
flags = {"rw": os.O_RDWR, "ro": os.O_RDONLY}[sys.argv[2]]
try:
    os.close(os.open(sys.argv[1], flags))
    print("opened")
except PermissionError:
    print("denied")
"""

CONNECT_AS_NOBODY = """
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(5)
try:
    s.connect(sys.argv[1])
    s.sendall(b"\\x01\\x00")
    print("connected")
except PermissionError:
    print("denied")
"""


def nobody_open(path, how):
    return nobody_ok(OPEN_AS_NOBODY, path, how).strip()


def wait_socket(path, p):
    def ready():
        check(p.poll() is None, "statebus exited at start (status %s)" % p.poll())
        return os.path.exists(path) and stat.S_ISSOCK(os.lstat(path).st_mode)
    wait_for("control socket " + path, ready, timeout=20)


def case_c_d_daemon_made_region_and_socket():
    shm = os.path.join(D, "c-region")
    ctl = shm + ".ctl"
    p = start(statebus(shm, ctl), "c-statebus")
    wait_socket(ctl, p)
    st = os.lstat(shm)
    check(stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o640,
          "region mode %o" % st.st_mode)
    check(st.st_uid == os.geteuid(), "region owner %d" % st.st_uid)
    check(nobody_open(shm, "rw") == "denied", "nobody opened the region for writing")
    check(nobody_open(shm, "ro") == "denied", "nobody (not in the group) opened the region")
    cs = os.lstat(ctl)
    check(stat.S_IMODE(cs.st_mode) == 0o660, "control socket mode %o" % cs.st_mode)
    check(cs.st_uid == os.geteuid(), "control socket owner %d" % cs.st_uid)
    check(nobody_ok(CONNECT_AS_NOBODY, ctl).strip() == "denied", "nobody connected to the control socket")
    # the owner still talks to it
    h = sytest.syctl_json(SYCTL, shm, "header")
    check(h["statebus"]["pid"] == p.pid, "header: %r" % h.get("statebus"))
    stop(p)

    # with --shm-group: members read (syctl read-only), nobody writes
    shm = os.path.join(D, "c-group")
    ctl = shm + ".ctl"
    p = start(statebus(shm, ctl, "--shm-group", NOGROUP_NAME), "c-statebus-group")
    wait_socket(ctl, p)
    st = os.lstat(shm)
    check(stat.S_IMODE(st.st_mode) == 0o640 and st.st_gid == NOGROUP,
          "grouped region: mode %o gid %d" % (st.st_mode, st.st_gid))
    cs = os.lstat(ctl)
    check(stat.S_IMODE(cs.st_mode) == 0o660 and cs.st_gid == NOGROUP,
          "grouped control socket: mode %o gid %d" % (cs.st_mode, cs.st_gid))
    check(nobody_open(shm, "rw") == "denied", "a group member opened the region for writing")
    check(nobody_open(shm, "ro") == "opened", "a group member could not read the region")
    out = subprocess.run(AS_NOBODY + [SYCTL, "--shm", shm, "--json", "header"],
                         capture_output=True, text=True, timeout=20)
    check(out.returncode == 0 and '"pid": %d' % p.pid in out.stdout,
          "syctl header as a group member: %d %s %s" % (out.returncode, out.stdout, out.stderr))
    stop(p)

    # the router master creates it the same way when it starts first
    shm = os.path.join(D, "c-router")
    r = start(router(shm, "--shm-group", NOGROUP_NAME), "c-router")
    wait_for("router region", lambda: r.poll() is None and os.path.exists(shm) and
             os.lstat(shm).st_size > 0, timeout=20)
    st = os.lstat(shm)
    check(stat.S_IMODE(st.st_mode) == 0o640 and st.st_gid == NOGROUP and
          st.st_uid == os.geteuid(), "router's region: mode %o uid %d gid %d" %
          (st.st_mode, st.st_uid, st.st_gid))
    check(nobody_open(shm, "rw") == "denied", "nobody opened the router's region for writing")
    stop(r)


def main():
    case_a_region_precreated_by_nobody()
    case_b_planted_symlinks()
    case_c_d_daemon_made_region_and_socket()
    print("state_ownership: OK")


if __name__ == "__main__":
    def cleanup(ok):
        sytest.stop_procs(procs)
        shutil.rmtree(D, ignore_errors=True)
    sys.exit(0 if sytest.run_main(main, cleanup) else 1)
