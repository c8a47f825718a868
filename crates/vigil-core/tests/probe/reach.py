"""What a command can reach, printed one fact a line (the sandbox probe of issue 30).

    python3 reach.py <json>

The JSON names what to try: `writable` (paths: can a file be created in / appended to
it?), `secrets` (paths: can it be read or listed?), `sockets` (extra path sockets, besides
every socket file under /run, /var/run and /tmp), `abstract` (abstract socket names,
besides every one /proc/net/unix lists), `tcp` ([host, port] pairs). Prints `W path`,
`R path`, `S path`, `A name`, `T host:port` for each that worked, and `P socketpair` when a
socket pair can be made (it must, inside too). A write leaves its mark (`.<mark>` in a
folder, a `# <mark>` line at a file's end; `mark` from the JSON, one per test, so tests
running side by side never count each other's marks) for the test to find on the host.
"""
import json
import os
import socket
import sys

want = json.loads(sys.argv[1])
mark = want.get("mark", "vigil-probe")


def writable(path):
    # Left in place: the test looks for it on the host, so a write into a private copy
    # (the sandbox's own /tmp) does not count as one.
    try:
        if os.path.isdir(path):
            with open(os.path.join(path, "." + mark), "w") as f:
                f.write("written")
        else:
            with open(path, "a") as f:
                f.write("\n# %s\n" % mark)
        return True
    except OSError:
        return False


def readable(path):
    try:
        if os.path.isdir(path):
            return len(os.listdir(path)) > 0
        with open(path, "rb") as f:
            return len(f.read(1)) > 0
    except OSError:
        return False


def connects(address):
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    except OSError:
        return False
    try:
        s.settimeout(1)
        s.connect(address)
        return True
    except OSError:
        return False
    finally:
        s.close()


def socket_files():
    found = set(want.get("sockets", []))
    for top in ["/run", "/var/run", "/tmp"]:
        for root, dirs, files in os.walk(top, onerror=lambda e: None):
            for name in files + dirs:
                p = os.path.join(root, name)
                try:
                    if os.path.exists(p) and (os.stat(p).st_mode & 0o170000) == 0o140000:
                        found.add(p)
                except OSError:
                    pass
    return sorted(found)


def abstract_names():
    names = set(want.get("abstract", []))
    try:
        with open("/proc/net/unix") as f:
            next(f)
            for line in f:
                parts = line.split()
                if len(parts) >= 8 and parts[7].startswith("@"):
                    names.add(parts[7][1:])
    except OSError:
        pass
    return sorted(names)


for p in want.get("writable", []):
    if writable(p):
        print("W", p)
for p in want.get("secrets", []):
    if readable(p):
        print("R", p)
for p in socket_files():
    if connects(p):
        print("S", p)
for name in abstract_names():
    if connects("\0" + name):
        print("A", name)
for host, port in want.get("tcp", []):
    try:
        socket.create_connection((host, port), timeout=2).close()
        print("T %s:%d" % (host, port))
    except OSError:
        pass
try:
    a, b = socket.socketpair()
    a.sendall(b"x")
    if b.recv(1) == b"x":
        print("P socketpair")
except OSError as e:
    print("socketpair failed:", e)
print("done")
