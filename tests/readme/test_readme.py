#!/usr/bin/env python3
"""README.md's shell commands, run as written: the README is a specification, so it is tested.

The convention (README.md, section Tests):
  - every ```sh block of README.md runs, top to bottom, in one bash session (so `eval "$(...)"`
    and `out=$(mktemp -d)` carry over to the commands after them);
  - each line is one command (a trailing backslash continues it); it must exit 0, or N where
    its comment says `exits N`;
  - the commands that cannot run here are in EXCLUDED, with the reason; daemons are in
    BACKGROUND: started in the background, waited for until ready, stopped at the end. Every
    entry of both must still name a README command, so neither list can go stale.

Where they run: a fresh copy of the checkout (its tracked and untracked files; no build/, no
.devtime/), so what the commands write (.devtime/agent.token, ...) never touches the real one;
with the executables under test (DEVTIME_BUILD_DIR: the quickstart then neither installs nor
builds) and the stack's data in the copy (DEVTIME_QUICKSTART_DIR); as a normal user with a
fresh HOME (as root: as `nobody`), which is what an agent example "from a clone" must survive.
While they run, the test holds 127.0.0.1:50051 and 127.0.0.1:9464 (accepting and closing
connections), so the quickstart has to choose other ports and a command that assumes them
fails at once. At the end: the stack is not on those ports, the example agent's run-now job
succeeded, and its data went to the normal user's ~/.local/state/devtime-agent. Whatever was
started is stopped (what is left of the session's processes, then `deploy/quickstart.sh destroy`).

  test_readme.py --source DIR --build-dir DIR [--timeout SECONDS]
"""

import argparse
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

# README command -> why it does not run here.
EXCLUDED = {
    "deploy/test.sh": "the whole test command: it runs CTest, and so this test",
    "kubectl kustomize deploy/k8s | kubectl apply -f -": "needs a Kubernetes cluster",
    "TRACE_BENCH=build/bin/trace_bench tests/bench/trace/run.sh 1000":
        "a benchmark: writes a 1 GB trace, minutes (CTest runs its smoke run)",
    "build/bin/detect_quality_bench": "a benchmark of minutes (CTest runs its smoke run)",
    "build/bin/detect_quality_bench --series 1000 --mode default --only drift":
        "a benchmark of minutes at 1000 series (CTest runs its smoke run)",
    "build/bin/detect_quality_bench --mode default --only mix --dump-misses /tmp/misses":
        "a benchmark, writing a few hundred files under /tmp (CTest runs its smoke run)",
    "build/bin/detect_speed_bench": "a benchmark of minutes (CTest runs its smoke run)",
    "build/bin/fleet_bench --sessions 2000 --uploaders 200":
        "a load benchmark of minutes on a PostgreSQL server (CTest runs its smoke run)",
    "build/bin/monitor_bench --apps 64 --period 10 --hours 6":
        "a benchmark of a minute (CTest runs its smoke run, MonitorBench.smoke)",
    "build/bin/fleet_bench --monitor --monitor-hosts 2000 --monitor-models 8 --monitor-hours 2":
        "a load benchmark of minutes on a PostgreSQL server",
}

# README command -> a shell condition that is true once it is ready (polled, with a deadline).
BACKGROUND = {
    "devtime-agent run --config deploy/agent.example.yaml":
        'devtimectl agents list | grep -Eq "^$(hostname)[[:space:]].*[[:space:]]yes[[:space:]]"',
}

# Checked after the last command, in the same session: (what to wait for, with a deadline;
# what must then hold). The README's agent example really ran its job, as a normal user, with
# its data where the README says.
AFTERWARDS = [
    ('devtimectl jobs history rmsnorm-naive | grep -Eq " (succeeded|failed) "',
     'devtimectl jobs history rmsnorm-naive | grep -q " succeeded "'),
    ("true", 'test -d "$HOME/.local/state/devtime-agent/spool"'),
]

HELD_PORTS = (50051, 9464)  # the quickstart's preferred ports: taken by "someone else"
NOBODY = 65534


def readme_commands(readme_text):
    """(line number, command, expected exit code) of every line of every ```sh block."""
    commands, in_block, pending, start = [], False, "", 0
    for number, line in enumerate(readme_text.splitlines(), 1):
        stripped = line.strip()
        if not in_block:
            in_block = stripped == "```sh"
            continue
        if stripped == "```":
            in_block = False
            continue
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if not pending:
            start = number
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        command = pending + stripped
        pending = ""
        expected = re.search(r"\bexits (\d+)\b", split_comment(command)[1])
        commands.append((start, command, int(expected.group(1)) if expected else 0))
    return commands


def split_comment(command):
    """(the command, its trailing comment): a `#` after a blank, outside quotes, starts it."""
    quote_char = None
    for i, char in enumerate(command):
        if quote_char:
            quote_char = None if char == quote_char else quote_char
        elif char in "'\"":
            quote_char = char
        elif char == "#" and (i == 0 or command[i - 1].isspace()):
            return command[:i].strip(), command[i:]
    return command.strip(), ""


def without_comment(command):
    """The command without its comment: the key of EXCLUDED and BACKGROUND."""
    return split_comment(command)[0]


def quote(text):
    return "'" + text.replace("'", "'\\''") + "'"


def session_script(commands, copy, log_dir):
    """The bash session: one step per README command, then the AFTERWARDS checks."""
    lines = [
        f"cd {quote(copy)}",
        "wait_for() {  # wait_for SECONDS CONDITION [PID: give up when it has ended]",
        '  local deadline=$((SECONDS + $1))',
        '  until eval "$2" >/dev/null 2>&1; do',
        '    [ "$SECONDS" -lt "$deadline" ] || return 1',
        '    [ -z "${3:-}" ] || kill -0 "$3" 2>/dev/null || return 1',
        "    sleep 0.5",
        "  done",
        "}",
        "step() {  # step LINE EXPECTED COMMAND",
        "  printf '\\n### README.md:%s  $ %s\\n' \"$1\" \"$3\"",
        '  eval "$3"',
        "  local rc=$?",
        '  if [ "$rc" -ne "$2" ]; then',
        "    printf '### FAILED: README.md:%s exited %s, expected %s: %s\\n' \"$1\" \"$rc\" \"$2\" \"$3\"",
        "    exit 1",
        "  fi",
        "}",
        "background() {  # background LINE COMMAND READY",
        "  printf '\\n### README.md:%s  $ %s  (in the background)\\n' \"$1\" \"$2\"",
        f'  ( eval "$2" ) >{quote(log_dir)}/background-"$1".log 2>&1 &',
        '  if ! wait_for 180 "$3" $!; then',
        "    printf '### FAILED: README.md:%s did not get ready (%s); its log:\\n' \"$1\" \"$3\"",
        f'    tail -n 30 {quote(log_dir)}/background-"$1".log',
        "    exit 1",
        "  fi",
        "}",
        "afterwards() {  # afterwards READY CHECK",
        "  printf '\\n### afterwards: %s\\n' \"$2\"",
        '  if ! wait_for 300 "$1" || ! eval "$2"; then',
        "    printf '### FAILED afterwards: %s\\n' \"$2\"",
        f"    tail -n 30 {quote(log_dir)}/background-*.log",
        "    exit 1",
        "  fi",
        "}",
    ]
    for line, command, expected in commands:
        key = without_comment(command)
        if key in EXCLUDED:
            lines.append(f"printf '\\n### README.md:%s  skipped: %s\\n' {line} "
                         f"{quote(key + ' (' + EXCLUDED[key] + ')')}")
        elif key in BACKGROUND:
            lines.append(f"background {line} {quote(command)} {quote(BACKGROUND[key])}")
        else:
            lines.append(f"step {line} {expected} {quote(command)}")
    for ready, check in AFTERWARDS:
        lines.append(f"afterwards {quote(ready)} {quote(check)}")
    lines.append("printf '\\n### every README command did what the README says\\n'")
    return "\n".join(lines) + "\n"


class PortHolder:
    """Listens on 127.0.0.1:PORT and closes every connection: a collector that is not ours."""

    def __init__(self, port):
        self.port, self.connections, self.held = port, 0, False
        self._stop = threading.Event()
        self._socket = socket.socket()
        # Our own closed connections of a previous run linger in TIME_WAIT on this port.
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self._socket.bind(("127.0.0.1", port))
            self._socket.listen(16)
            self._socket.settimeout(0.2)
            self.held = True
        except OSError:  # another program holds it already: just as good
            self._socket.close()
            return
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self):
        while not self._stop.is_set():
            try:
                connection, _ = self._socket.accept()
            except OSError:
                continue
            self.connections += 1
            connection.close()

    def close(self):
        if self.held:
            self._stop.set()
            self._thread.join()
            self._socket.close()


def copy_checkout(source, target):
    """The tracked and untracked (not ignored) files of the checkout, as they are now."""
    listed = subprocess.run(["git", "-C", source, "ls-files", "-co", "--exclude-standard", "-z"],
                            capture_output=True, check=True).stdout.decode().split("\0")
    for relative in filter(None, listed):
        origin = os.path.join(source, relative)
        if not os.path.isfile(origin):  # deleted but not committed yet
            continue
        destination = os.path.join(target, relative)
        os.makedirs(os.path.dirname(destination), exist_ok=True)
        shutil.copy2(origin, destination)


def as_user(path_owner_tree, user):
    """chown -R the tree to `user` (when root) so that user can write in it."""
    if user is None:
        return
    for directory, _, files in os.walk(path_owner_tree):
        os.chown(directory, user.pw_uid, user.pw_gid)
        for name in files:
            os.lchown(os.path.join(directory, name), user.pw_uid, user.pw_gid)


def session_processes(session_id):
    """The live processes of a session (what the README session started and left running)."""
    pids = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = open(f"/proc/{entry}/stat").read()
        except OSError:
            continue
        state, _, _, session = stat[stat.rindex(")") + 2:].split()[:4]
        if int(session) == session_id and state != "Z":
            pids.append(int(entry))
    return pids


def stop_session(session_id):
    """SIGTERM to every process of the session (the agent then ends its jobs), SIGKILL after 30 s."""
    for sig, grace in ((signal.SIGTERM, 30), (signal.SIGKILL, 5)):
        for pid in session_processes(session_id):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + grace
        while session_processes(session_id) and time.monotonic() < deadline:
            time.sleep(0.1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", required=True)
    parser.add_argument("--build-dir", required=True)
    parser.add_argument("--timeout", type=float, default=1500)
    args = parser.parse_args()
    source = os.path.abspath(args.source)
    build = os.path.abspath(args.build_dir)

    commands = readme_commands(open(os.path.join(source, "README.md")).read())
    keys = {without_comment(command) for _, command, _ in commands}
    stale = sorted((set(EXCLUDED) | set(BACKGROUND)) - keys)
    if stale:
        sys.exit(f"EXCLUDED/BACKGROUND name commands README.md no longer has: {stale}")
    if not any(key in BACKGROUND for key in keys):
        sys.exit("README.md no longer starts the example agent: update BACKGROUND/AFTERWARDS")

    user = pwd.getpwuid(NOBODY) if os.geteuid() == 0 else None
    top = tempfile.mkdtemp(prefix="devtime-readme-")
    copy, home, logs = (os.path.join(top, name) for name in ("checkout", "home", "logs"))
    for directory in (copy, home, logs, os.path.join(top, "tmp")):
        os.makedirs(directory)
    copy_checkout(source, copy)
    if user is not None and subprocess.run(["test", "-x", os.path.join(build, "bin/devtimectl")],
                                           user=NOBODY, group=NOBODY, extra_groups=[]).returncode:
        # The build is out of the normal user's reach (e.g. under /root): use copies.
        os.makedirs(os.path.join(top, "build/bin"))
        for name in ("devtimectl", "devtime-agent", "devtime-collector"):
            shutil.copy2(os.path.join(build, "bin", name), os.path.join(top, "build/bin", name))
        build = os.path.join(top, "build")
    script = os.path.join(top, "readme-session.sh")
    with open(script, "w") as out:
        out.write(session_script(commands, copy, logs))
    as_user(top, user)

    stack = os.path.join(copy, ".devtime", "quickstart-under-test")
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("DEVTIME_", "XDG_")) and key != "STATE_DIRECTORY"}
    name = user.pw_name if user else pwd.getpwuid(os.geteuid()).pw_name
    env.update(HOME=home, USER=name, LOGNAME=name, TMPDIR=os.path.join(top, "tmp"),
               DEVTIME_BUILD_DIR=build, DEVTIME_QUICKSTART_DIR=stack,
               PATH="/usr/local/bin:/usr/bin:/bin")
    who = dict(user=NOBODY, group=NOBODY, extra_groups=[]) if user else {}

    # ctest ending the test (SIGTERM) still runs the cleanup below.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("stopped by SIGTERM"))
    holders = [PortHolder(port) for port in HELD_PORTS]
    started = time.monotonic()
    failures = []
    session = None
    try:
        # Its own session: whatever it leaves running (the background agent, a command cut off
        # by the timeout) is found and stopped afterwards; the quickstart's own daemons are
        # stopped by `deploy/quickstart.sh destroy`.
        session = subprocess.Popen(["bash", script], env=env, stdin=subprocess.DEVNULL,
                                   start_new_session=True, **who)
        try:
            if session.wait(timeout=args.timeout) != 0:
                failures.append(f"the README session failed (exit {session.returncode}), above")
        except subprocess.TimeoutExpired:
            failures.append(f"the README session ran past {args.timeout:.0f} s")
        print()
        for holder in holders:
            print(f"127.0.0.1:{holder.port}: " + (
                f"held by this test ({holder.connections} connection(s) refused, the"
                " quickstart's free-port probe among them)" if holder.held
                else "taken by another program already"))
        ports = dict(line.strip().split("=", 1) for line in
                     open(os.path.join(stack, "ports")) if "=" in line)
        print(f"the quickstart's stack: gRPC {ports.get('grpc')}, metrics {ports.get('metrics')}")
        for holder, kind in zip(holders, ("grpc", "metrics")):
            if ports.get(kind) == str(holder.port):
                failures.append(f"the quickstart's {kind} port is {holder.port}, which was taken")
    except OSError as e:
        failures.append(f"no quickstart stack to check: {e}")
    finally:
        if session is not None:
            stop_session(session.pid)
            session.wait()
        subprocess.run(["deploy/quickstart.sh", "destroy"], cwd=copy, env=env,
                       stdout=subprocess.DEVNULL, **who)
        for holder in holders:
            holder.close()
        shutil.rmtree(top, ignore_errors=True)
    print(f"README commands: {len(commands)} ({sum(without_comment(c) in EXCLUDED for _, c, _ in commands)} "
          f"skipped), {time.monotonic() - started:.1f} s")
    for failure in failures:
        print("FAILED:", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
