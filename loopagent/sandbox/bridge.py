"""The bridge inside the sandbox: a loopback listener in the sandbox's network namespace, handed to the
proxy outside through its Unix socket, then the command in the bridge's place.

Run as `python -I -S -c SOURCE SOCKET PORT COMMAND...` inside the sandbox, where nothing else listens
yet: it needs only the interpreter's standard library, and with -I -S nothing from the workspace, the
environment or site-packages is imported. It binds 127.0.0.1:PORT, sends the listening socket over
SOCKET (SCM_RIGHTS), and execs the command: the proxy accepts the sandbox's connections itself, so
no process of ours stays inside and no byte is copied twice. It must not import loopagent: its source
is read from this file and passed as -c. It imports `_socket`, not `socket` (whose enums cost 25 ms and
more of every call's start).
"""

import _socket
import os
import sys

HANDOVER = b"loop-bridge"  # the one message the proxy takes a listener from


def fail(code, text):
    sys.stderr.write(f"loop: {text}\n")
    sys.stderr.flush()
    os._exit(code)


def main(argv):
    path, port, command = argv[1], int(argv[2]), argv[3:]
    listener = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    listener.setsockopt(_socket.SOL_SOCKET, _socket.SO_REUSEADDR, 1)
    door = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        listener.bind(("127.0.0.1", port))
        listener.listen(1024)  # connections wait in the backlog until the proxy accepts them
        door.connect(path)
        fd = listener.fileno().to_bytes(4, sys.byteorder)  # SCM_RIGHTS carries C ints
        door.sendmsg([HANDOVER], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, fd)])
    except OSError as exc:
        fail(126, f"the network bridge cannot reach loop's proxy ({exc})")
    door.close()
    listener.close()  # the proxy holds its own copy
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        fail(127, f"cannot start {command[0]} ({exc.strerror})")


if __name__ == "__main__":
    main(sys.argv)
