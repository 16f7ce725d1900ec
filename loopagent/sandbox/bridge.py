"""The bridge inside the sandbox: a loopback listener in front of the proxy's Unix socket, then the command.

Run as `python -I -S -c SOURCE SOCKET PORT COMMAND...` inside the sandbox's own network namespace,
where nothing else listens yet: it needs only the interpreter's standard library, and with -I -S
nothing from the workspace, the environment or site-packages is imported. It binds 127.0.0.1:PORT,
starts the command, relays each connection to SOCKET, and exits with the command's status. It must
not import loopagent: its source is read from this file and passed as -c.
"""

import os
import socket
import sys
import threading

CHUNK = 256 * 1024


def pump(src, dst):
    buf = bytearray(CHUNK)
    view = memoryview(buf)
    try:
        while True:
            n = src.recv_into(buf)
            if not n:
                break
            dst.sendall(view[:n])
        dst.shutdown(socket.SHUT_WR)
    except OSError:
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def bridge(client, path):
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(path)
    except OSError:
        client.close()
        upstream.close()
        return
    other = threading.Thread(target=pump, args=(upstream, client), daemon=True)
    other.start()
    pump(client, upstream)
    other.join()
    client.close()
    upstream.close()


def serve(listener, path):
    while True:
        client, _ = listener.accept()
        client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        threading.Thread(target=bridge, args=(client, path), daemon=True).start()


def main(argv):
    path, port, command = argv[1], int(argv[2]), argv[3:]
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind(("127.0.0.1", port))
    except OSError as exc:
        sys.stderr.write(f"loop: the network bridge cannot listen on 127.0.0.1:{port} ({exc})\n")
        sys.stderr.flush()
        os._exit(126)
    listener.listen(512)
    threading.Thread(target=serve, args=(listener, path), daemon=True).start()
    try:
        pid = os.posix_spawnp(command[0], command, os.environ)
    except OSError as exc:
        sys.stderr.write(f"loop: cannot start {command[0]} ({exc.strerror})\n")
        sys.stderr.flush()
        os._exit(127)
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except InterruptedError:
            continue
    code = os.waitstatus_to_exitcode(status)
    os._exit(code if code >= 0 else 128 - code)  # killed by a signal: the shell's 128 + N


if __name__ == "__main__":
    main(sys.argv)
