# The spawner in Python: what main.ts does, without a fork. A fork copies the forking process's
# page tables and then faults on each page either side writes (3-8 ms of CPU per process from
# Node.js on a busy server, where each fault costs tens of microseconds); posix_spawn starts the
# program from a child that shares this process's memory until it execs, so nothing is copied.
# Python's standard library only (3.8 or later), run isolated (-I -S: no PYTHON* variables, no
# site-packages). The server uses main.ts where this cannot start.
#
# Requests come on stdin as frames: "<length>\n" then fields, each "<length>:<bytes>":
#   id, key (hex), cwd, file, fd3 (0/1), has input (0/1), input, argc, argv..., envc, "K=V"...
# Answers go to stdout, one line each: "ready", "spawned ID PID", "exit ID CODE|- SIGNAL|-",
# "error ID CODE MESSAGE". Stdin's end (the server is gone) or SIGTERM: every process group it
# started is killed and it exits.
# Usage (by the server only): python3 -I -S spawner.py SOCKET_PATH
import errno
import os
import selectors
import signal
import socket
import struct
import sys

# What this process inherited beyond stdio goes first: every descriptor Python opens is
# close-on-exec, so the processes it starts get nothing but their stdio.
os.closerange(3, min(os.sysconf("SC_OPEN_MAX"), 1 << 16))

SOCKET_PATH = sys.argv[1]
MAGIC = 0x41544C53  # 'ATLS'
# Dispositions a new process must not inherit: Python ignores these at start-up, and an ignored
# signal stays ignored across exec.
RESET_SIGNALS = {signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT}

live = {}  # pid -> request id
writes = {}  # stdin pipe fd -> [bytes, offset]: input still to be written
selector = selectors.DefaultSelector()


def say(*words):
    try:
        os.write(1, (" ".join(str(w) for w in words) + "\n").encode())
    except OSError:
        server_gone()


def server_gone(*_):
    for pid in live:
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass
    os._exit(0)


def errno_name(number):
    return errno.errorcode.get(number, "UNKNOWN")


def open_stream(request_id, key, index):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(SOCKET_PATH)
        s.sendall(struct.pack(">IIB", MAGIC, request_id, index) + bytes.fromhex(key))
    except OSError:
        s.close()
        raise
    return s


def find_program(file, env):
    """As execvp looks for it: on the PATH of the process's own environment."""
    if b"/" in file:
        return file
    for folder in env.get(b"PATH", b"/usr/bin:/bin").split(b":"):
        candidate = os.path.join(folder or b".", file)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    raise FileNotFoundError(errno.ENOENT, "not found on PATH", file)


def start(request_id, key, cwd, file, fd3, has_input, data, argv, env):
    streams = []
    stdin = None
    try:
        for index in (1, 2, 3) if fd3 else (1, 2):
            streams.append(open_stream(request_id, key, index))
        stdin = os.pipe() if has_input else None
        stdin_fd = stdin[0] if stdin else os.open(os.devnull, os.O_RDONLY)
        actions = [(os.POSIX_SPAWN_DUP2, stdin_fd, 0)]
        actions += [(os.POSIX_SPAWN_DUP2, s.fileno(), i + 1) for i, s in enumerate(streams)]
        # The folder: this process's own, for the moment of the start (Python's posix_spawn has
        # no chdir action); nothing else here depends on it. Before the search: a relative PATH
        # entry is relative to it, as in the process.
        os.chdir(cwd)
        program = find_program(file, env)
        try:
            pid = os.posix_spawn(program, argv, env, file_actions=actions, setsid=True,
                                 setsigdef=RESET_SIGNALS, setsigmask=())
        finally:
            if not stdin:
                os.close(stdin_fd)
    except OSError as error:
        for s in streams:
            s.close()
        if stdin:
            os.close(stdin[0])
            os.close(stdin[1])
        code = errno_name(error.errno) if error.errno else "UNKNOWN"
        say("error", request_id, code, f"spawn {os.fsdecode(file)} {code}")
        return
    for s in streams:
        s.close()
    live[pid] = request_id
    say("spawned", request_id, pid)
    if stdin:
        os.close(stdin[0])
        os.set_blocking(stdin[1], False)
        writes[stdin[1]] = [data, 0]
        selector.register(stdin[1], selectors.EVENT_WRITE)


def write_input(fd):
    data, offset = writes[fd]
    try:
        offset += os.write(fd, data[offset:offset + 65536])
    except BlockingIOError:
        return
    except OSError:
        offset = len(data)  # it exited or closed its input without reading it all
    writes[fd][1] = offset
    if offset >= len(data):
        selector.unregister(fd)
        del writes[fd]
        os.close(fd)


def reap():
    while live:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        request_id = live.pop(pid, None)
        if request_id is None:
            continue
        if os.WIFSIGNALED(status):
            number = os.WTERMSIG(status)
            try:
                name = signal.Signals(number).name
            except ValueError:  # a real-time signal, which has no name of its own
                name = f"SIG{number}"
            say("exit", request_id, "-", name)
        else:
            say("exit", request_id, os.WEXITSTATUS(status), "-")


def fields_of(frame):
    fields, at = [], 0
    while at < len(frame):
        colon = frame.index(b":", at)
        n = int(frame[at:colon])
        fields.append(frame[colon + 1:colon + 1 + n])
        at = colon + 1 + n
    return fields


def handle(frame):
    f = fields_of(frame)
    argc = int(f[7])
    argv = f[8:8 + argc]
    envc = int(f[8 + argc])
    env = dict(pair.split(b"=", 1) for pair in f[9 + argc:9 + argc + envc])
    start(int(f[0]), f[1].decode(), f[2], f[3], f[4] == b"1", f[5] == b"1", f[6], argv, env)


def main():
    if not hasattr(os, "posix_spawn"):
        say("unsupported", f"Python {sys.version.split()[0]} has no os.posix_spawn (3.8 or later has)")
        sys.exit(3)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    os.set_blocking(wake_r, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.signal(signal.SIGTERM, server_gone)
    # Ctrl+C in the server's terminal reaches this process group too: the server stops gracefully
    # and this process ends with it, not before.
    signal.signal(signal.SIGINT, lambda *_: None)
    selector.register(0, selectors.EVENT_READ)
    selector.register(wake_r, selectors.EVENT_READ)
    pending = b""
    say("ready")
    while True:
        for key, _ in selector.select():
            if key.fd == wake_r:
                try:
                    os.read(wake_r, 4096)
                except BlockingIOError:
                    pass
                reap()
            elif key.fd == 0:
                chunk = os.read(0, 1 << 16)
                if not chunk:
                    server_gone()
                pending += chunk
                while True:
                    nl = pending.find(b"\n")
                    if nl < 0:
                        break
                    length = int(pending[:nl])
                    if len(pending) < nl + 1 + length:
                        break
                    frame, pending = pending[nl + 1:nl + 1 + length], pending[nl + 1 + length:]
                    handle(frame)
            elif key.fd in writes:
                write_input(key.fd)


main()
