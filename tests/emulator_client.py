"""A program that drives the emulated driver's interface directly, as the XDNA shim does,
for tests that have no XRT: run under the preload library (`python emulator_client.py
'[[SCENARIO, ARGS], ...]'`), it runs each scenario (each on a device file of its own) and
prints a JSON list of what each saw.

Every call is a real open/stat/ioctl/mmap of this process, answered by the preload
library and the model process; nothing here imports the harness.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import json
import mmap
import os
import struct
import sys
import time

DRM = ord("d")


def iowr(nr: int, size: int) -> int:
    return (3 << 30) | (size << 16) | (DRM << 8) | nr


def iow(nr: int, size: int) -> int:
    return (1 << 30) | (size << 16) | (DRM << 8) | nr


CREATE_HWCTX, DESTROY_HWCTX, CONFIG_HWCTX = iowr(0x40, 56), iowr(0x41, 8), iowr(0x42, 24)
CREATE_BO, GET_BO_INFO, EXEC_CMD = iowr(0x43, 32), iowr(0x44, 48), iowr(0x46, 56)
GET_INFO, GET_ARRAY = iowr(0x47, 16), iowr(0x4A, 24)
WAIT_CMD_SHIM, WAIT_CMD_UAPI = iowr(0x49, 16), iow(0x49, 16)
VERSION, GEM_CLOSE = iowr(0x00, 64), iow(0x09, 8)
PRIME_TO_FD, PRIME_TO_HANDLE = iowr(0x2D, 12), iowr(0x2E, 12)
SYNCOBJ_DESTROY, TIMELINE_WAIT = iowr(0xC0, 8), iowr(0xCA, 40)
BO_SHARE, BO_HEAP, BO_DEV, BO_CMD = 1, 2, 3, 4
START_CU, CHAIN, START_NPU = 0, 19, 20
NOP = struct.pack("<5I", 0x06040100, 0x00000108, 1, 0x14, 5)   # one NOOP, 8 columns
HEAP = 64 << 20
PAGE = 4096


class Device:
    def __init__(self, node: str = "/dev/accel/accel0") -> None:
        self.fd = os.open(node, os.O_RDWR | os.O_CLOEXEC)
        self.keep: list = []                      # ctypes memory the structs point to

    def ioctl(self, request: int, fmt: str, *values) -> tuple:
        buf = bytearray(struct.pack(fmt, *values))
        fcntl.ioctl(self.fd, request, buf, True)
        return struct.unpack(fmt, buf)

    def bo(self, kind: int, size: int) -> dict:
        handle = self.ioctl(CREATE_BO, "<QQQII", 0, 0, size, kind, 0)[4]
        _, _, _, _, offset, _, addr = self.ioctl(GET_BO_INFO, "<QQIIQQQ", 0, 0, handle, 0,
                                                 0, 0, 0)
        view = None
        if offset != (1 << 64) - 1:
            view = mmap.mmap(self.fd, (size + PAGE - 1) // PAGE * PAGE, offset=offset)
        return {"handle": handle, "offset": offset, "addr": addr, "map": view, "size": size}

    def context(self, columns: int = 8) -> tuple[int, int]:
        qos = (ctypes.c_uint32 * 8)()
        self.keep.append(qos)
        out = self.ioctl(CREATE_HWCTX, "<QQQIIIIIIII", 0, 0, ctypes.addressof(qos), 0, 0, 0,
                         columns * 4, 0, 0, 0, 0)
        return out[9], out[10]

    def config(self, ctx: int, pdi: int) -> None:
        conf = (ctypes.c_uint8 * 16)()
        struct.pack_into("<H6xIB3x", conf, 0, 1, pdi, 0)
        self.keep.append(conf)
        self.ioctl(CONFIG_HWCTX, "<IIQII", ctx, 0, ctypes.addressof(conf), 16, 0)

    def submit(self, ctx: int, cmd: int, args: list[int]) -> int:
        handles = (ctypes.c_uint32 * max(1, len(args)))(*args)
        self.keep.append(handles)
        return self.ioctl(EXEC_CMD, "<QQIIQQIIQ", 0, 0, ctx, 0, cmd,
                          ctypes.addressof(handles), 1, len(args), 0)[8]

    def wait(self, syncobj: int, point: int, timeout_s: float | None) -> int:
        handles = (ctypes.c_uint32 * 1)(syncobj)
        points = (ctypes.c_uint64 * 1)(point)
        self.keep += [handles, points]
        deadline = (1 << 63) - 1 if timeout_s is None else \
            time.monotonic_ns() + int(timeout_s * 1e9)
        try:
            self.ioctl(TIMELINE_WAIT, "<QQqIIII", ctypes.addressof(handles),
                       ctypes.addressof(points), deadline, 1, 3, 0, 0)
        except OSError as err:
            return -err.errno
        return 0

    def wait_cmd(self, ctx: int, seq: int, timeout_ms: int, request: int) -> int:
        try:
            self.ioctl(request, "<IIQ", ctx, timeout_ms, seq)
        except OSError as err:
            return -err.errno
        return 0


def start_cu(view: mmap.mmap, instr_addr: int, words: int, data: list[int]) -> None:
    """An ERT_START_CU packet: CU mask 1, the DPU register map (opcode 3, instructions,
    their length in words, data buffer addresses)."""
    regmap = struct.pack("<QQI", 3, instr_addr, words) + b"".join(
        struct.pack("<Q", a) for a in data)
    count = 1 + len(regmap) // 4
    view[:4 + 4 * count] = struct.pack("<II", (START_CU << 23) | (count << 12) | 1, 1) + regmap


def start_npu(view: mmap.mmap, instr_addr: int, size: int, data: list[int]) -> None:
    """An ERT_START_NPU packet: CU mask 1, {instruction buffer, size, no properties},
    then the arguments (opcode 3, and data buffer addresses)."""
    payload = struct.pack("<QII", instr_addr, size, 0) + struct.pack("<Q", 3) + b"".join(
        struct.pack("<Q", a) for a in data)
    count = 1 + len(payload) // 4
    view[:4 + 4 * count] = struct.pack("<II", (START_NPU << 23) | (count << 12) | 1, 1) + \
        payload


def chain(view: mmap.mmap, members: list[int]) -> None:
    payload = struct.pack("<6I", len(members), 0, 0, 0, 0, 0) + b"".join(
        struct.pack("<Q", h) for h in members)
    count = len(payload) // 4
    view[:4 + len(payload)] = struct.pack("<I", (CHAIN << 23) | (count << 12) | 1) + payload


def header(view: mmap.mmap) -> dict:
    word = struct.unpack_from("<I", view, 0)[0]
    return {"state": word & 0xF, "opcode": (word >> 23) & 0x1F}


def discovery() -> dict:
    """What the shim's discovery finds: the driver folder's links, where they resolve,
    the device's files, the node's type."""
    drivers = "/sys/bus/pci/drivers/amdxdna"
    entries = sorted(os.listdir(drivers))
    links = [e for e in entries if os.path.islink(os.path.join(drivers, e))]
    bdf = next(e for e in links if e.count(":") == 2)
    real = os.path.realpath(os.path.join(drivers, bdf))
    device = f"/sys/bus/pci/devices/{bdf}"
    files = {}
    for name in ("vendor", "device", "revision", "subsystem_vendor", "subsystem_device",
                 "vbnv", "device_type", "fw_version"):
        with open(f"{device}/{name}", encoding="utf-8") as fh:
            files[name] = fh.read().strip()
    node = os.stat("/dev/accel/accel0")
    params = {}
    for name in sorted(os.listdir("/sys/module/amdxdna/parameters")):
        try:
            with open(f"/sys/module/amdxdna/parameters/{name}", encoding="utf-8") as fh:
                params[name] = fh.read().strip()
        except PermissionError:
            params[name] = "unreadable"
    return {"links": links, "bdf": bdf, "real": real, "files": files,
            "accel": sorted(os.listdir(f"{device}/accel")),
            "node_is_char": (node.st_mode & 0o170000) == 0o020000,
            "node_rdev": [os.major(node.st_rdev), os.minor(node.st_rdev)],
            "params": params, "module_version": os.path.exists("/sys/module/amdxdna/version")}


def run_chains(arg: dict) -> dict:
    """`runs` NOP runs in chains of `chain` (or single starts with chain 0), then wait on
    each chain's point: the chain states, error indexes and sub-command 0's payload."""
    dev = Device()
    out: dict = {"discovery": discovery()}
    name_buf = ctypes.create_string_buffer(64)
    ver = dev.ioctl(VERSION, "<iiixxxxQQQQQQ", 0, 0, 0, 64, ctypes.addressof(name_buf), 0,
                    0, 0, 0)
    out["driver"] = {"name": name_buf.value.decode(), "version": list(ver[:3])}
    fw = (ctypes.c_uint32 * 4)()
    dev.ioctl(GET_INFO, "<IIQ", 8, 16, ctypes.addressof(fw))
    out["firmware"] = list(fw)
    heap = dev.bo(BO_HEAP, HEAP)
    out["heap_addr"] = heap["addr"]
    ctx, syncobj = dev.context(arg.get("columns", 8))
    out["context"] = ctx
    pdi = dev.bo(BO_DEV, 4096)
    dev.config(ctx, pdi["handle"])
    instr = dev.bo(BO_DEV, 4096)
    stream = arg.get("stream")
    code = bytes.fromhex(stream) if stream else NOP
    heap["map"][instr["addr"] - heap["addr"]:instr["addr"] - heap["addr"] + len(code)] = code
    data = dev.bo(BO_SHARE, 4096)
    bad = dev.bo(BO_DEV, 4096)              # a stream for another device generation
    wrong = bytearray(code)
    wrong[2] ^= 0x7
    heap["map"][bad["addr"] - heap["addr"]:bad["addr"] - heap["addr"] + len(wrong)] = wrong
    opcode = arg.get("opcode", "cu")
    runs = []
    for index in range(arg["runs"]):
        cmd = dev.bo(BO_CMD, 4096)
        stream = bad if index == arg.get("bad_at") else instr
        if opcode == "npu":
            start_npu(cmd["map"], stream["addr"], len(code), [data["addr"]] * 5)
        else:
            start_cu(cmd["map"], stream["addr"], len(code) // 4, [data["addr"]] * 5)
        runs.append(cmd)
    size = arg.get("chain", 24)
    chains = []
    for start in range(0, len(runs), size or 1):    # as XRT's runlist: every chain made
        if size:                                      # before the first is submitted
            head = dev.bo(BO_CMD, 4096)
            chain(head["map"], [r["handle"] for r in runs[start:start + size]])
        else:
            head = runs[start]
        chains.append(head)
    if arg.get("corrupt"):                 # a chain naming a handle that is no BO
        chain(chains[0]["map"], [runs[0]["handle"], 9999])
        try:
            dev.submit(ctx, chains[0]["handle"], [])
        except OSError as err:
            return {"submit_error": errno.errorcode[err.errno]}
        finally:
            os.close(dev.fd)
        return {"submit_error": None}
    seqs = []
    for index, head in enumerate(chains):
        if index and arg.get("pause_s"):       # a slow host between its submits
            time.sleep(arg["pause_s"])
        seqs.append(dev.submit(ctx, head["handle"], [data["handle"], instr["handle"]]))
        if index == 4:
            out["first_after_fifth_submit"] = header(chains[0]["map"])["state"]
    out["seqs"] = seqs
    timeout = arg.get("timeout_s")
    waits = []
    for seq in seqs:
        if arg.get("wait", "").startswith("ioctl"):
            request = WAIT_CMD_UAPI if arg["wait"] == "ioctl-uapi" else WAIT_CMD_SHIM
            waits.append(dev.wait_cmd(ctx, seq, int((timeout or 0) * 1000), request))
        else:
            waits.append(dev.wait(syncobj, seq, timeout))
    out["waits"] = waits
    out["chains"] = []
    for head in chains:
        view = head["map"]
        item = header(view)
        if size:
            item["error_index"] = struct.unpack_from("<I", view, 12)[0]
            first = runs[chains.index(head) * size]["map"]
        else:
            first = view
        item["sub0_words"] = list(struct.unpack_from("<4I", first, 4))
        out["chains"].append(item)
    out["runs"] = [header(r["map"])["state"] for r in runs]
    failed = [head for head in chains if header(head["map"])["state"] != 4]
    if arg.get("again") and failed:
        # re-submit the failed chain as XRT re-executes a runlist: state reset, same BOs
        head = failed[0]
        view = head["map"]
        word = struct.unpack_from("<I", view, 0)[0]
        struct.pack_into("<I", view, 0, (word & ~0xF) | 1)
        seq = dev.submit(ctx, head["handle"], [])
        out["again"] = {"wait": dev.wait(syncobj, seq, timeout), **header(view),
                        "error_index": struct.unpack_from("<I", view, 12)[0]}
    if timeout is not None and -errno.ETIME in waits:
        os.close(dev.fd)                    # a hung chain: the file's release ends it
        return out
    dev.ioctl(SYNCOBJ_DESTROY, "<II", syncobj, 0)
    dev.ioctl(DESTROY_HWCTX, "<II", ctx, 0)
    os.close(dev.fd)
    out["kmsg"] = kernel_log()
    return out


def kernel_log() -> str:
    """/dev/kmsg as the harness reads it: one record per read, until there is no more."""
    fd = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK)
    chunks = []
    while True:
        chunk = os.read(fd, 8192)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(fd)
    return b"".join(chunks).decode()


def contexts(arg: dict) -> dict:
    """Contexts until the device refuses one: how many it took, and the error."""
    dev = Device()
    dev.bo(BO_HEAP, HEAP)
    made = 0
    while made < 64:
        try:
            dev.context(arg.get("columns", 8))
        except OSError as err:
            os.close(dev.fd)                # its release frees them for what follows
            return {"made": made, "errno": errno.errorcode.get(err.errno, err.errno)}
        made += 1
    return {"made": made}


def no_heap(arg: dict) -> dict:
    dev = Device()
    try:
        dev.context()
    except OSError as err:
        return {"errno": errno.errorcode.get(err.errno, err.errno)}
    finally:
        os.close(dev.fd)
    return {"errno": None}


def share(arg: dict) -> dict:
    """Export a shared BO, import it again (the same handle), read it through the fd."""
    dev = Device()
    bo = dev.bo(BO_SHARE, 8192)
    bo["map"][:5] = b"hello"
    fd = dev.ioctl(PRIME_TO_FD, "<IIi", bo["handle"], os.O_RDWR | os.O_CLOEXEC, -1)[2]
    size = os.lseek(fd, 0, os.SEEK_END)
    handle = dev.ioctl(PRIME_TO_HANDLE, "<IIi", 0, 0, fd)[0]
    with mmap.mmap(fd, 8192) as view:
        seen = bytes(view[:5])
    os.close(fd)
    dev.ioctl(GEM_CLOSE, "<II", bo["handle"], 0)
    os.close(dev.fd)
    return {"size": size, "same_handle": handle == bo["handle"], "seen": seen.decode()}


def syncobjs(arg: dict) -> dict:
    """A program's own timeline syncobj (as XRT's fences use one): signal, query, wait,
    export and import, destroy."""
    dev = Device()
    handle = dev.ioctl(iowr(0xBF, 8), "<II", 0, 0)[0]                      # SYNCOBJ_CREATE
    handles, points = (ctypes.c_uint32 * 1)(handle), (ctypes.c_uint64 * 1)(5)
    dev.keep += [handles, points]
    dev.ioctl(iowr(0xCD, 24), "<QQII", ctypes.addressof(handles), ctypes.addressof(points),
              1, 0)                                                          # signal 5
    points[0] = 0
    dev.ioctl(iowr(0xCB, 24), "<QQII", ctypes.addressof(handles), ctypes.addressof(points),
              1, 0)                                                          # query
    queried = points[0]
    fd = dev.ioctl(iowr(0xC1, 16), "<IIiI", handle, 0, -1, 0)[2]             # to fd
    imported = dev.ioctl(iowr(0xC2, 16), "<IIiI", 0, 0, fd, 0)[0]            # from fd
    os.close(fd)
    waits = {}
    for name, target, which in (("reached", 3, imported), ("later", 7, handle)):
        waits[name] = dev.wait(which, target, 0.02)
    dev.ioctl(SYNCOBJ_DESTROY, "<II", imported, 0)
    dev.ioctl(SYNCOBJ_DESTROY, "<II", handle, 0)
    os.close(dev.fd)
    return {"queried": queried, "imported_is_new_handle": imported != handle, **waits}


def identity(arg: dict) -> dict:
    """What DRM_IOCTL_VERSION answers (FastFlowLM gates on it), and the module's parameters
    as sysfs shows them."""
    dev = Device()
    name_buf = ctypes.create_string_buffer(64)
    ver = dev.ioctl(VERSION, "<iiixxxxQQQQQQ", 0, 0, 0, 64, ctypes.addressof(name_buf), 0,
                    0, 0, 0)
    os.close(dev.fd)
    return {"name": name_buf.value.decode(), "version": list(ver[:3]),
            "params": discovery()["params"]}


def errno_of(call) -> str | None:
    try:
        call()
    except OSError as err:
        return errno.errorcode.get(err.errno, str(err.errno))
    return None


def freed_while_running(arg: dict) -> dict:
    """Submit a chain that hangs, then close its command BO and sub-command 0 while the job
    runs (as a program that frees its buffers early): the job still ends, its state lands
    in the command BO (the program's mapping still shows it), and the device answers on."""
    dev = Device()
    heap = dev.bo(BO_HEAP, HEAP)
    ctx, syncobj = dev.context()
    pdi = dev.bo(BO_DEV, 4096)
    dev.config(ctx, pdi["handle"])
    instr = dev.bo(BO_DEV, 4096)
    heap["map"][instr["addr"] - heap["addr"]:instr["addr"] - heap["addr"] + len(NOP)] = NOP
    data = dev.bo(BO_SHARE, 4096)
    runs = []
    for _ in range(4):
        cmd = dev.bo(BO_CMD, 4096)
        start_cu(cmd["map"], instr["addr"], len(NOP) // 4, [data["addr"]] * 5)
        runs.append(cmd)
    head = dev.bo(BO_CMD, 4096)
    chain(head["map"], [r["handle"] for r in runs])
    seq = dev.submit(ctx, head["handle"], [data["handle"], instr["handle"]])
    closed = [errno_of(lambda h=h: dev.ioctl(GEM_CLOSE, "<II", h, 0))
              for h in (head["handle"], runs[0]["handle"], data["handle"])]
    waited = dev.wait(syncobj, seq, None)
    after = dev.bo(BO_SHARE, 4096)                 # the device still answers
    out = {"closed": closed, "wait": waited, "state": header(head["map"])["state"],
           "sub0_untouched": struct.unpack_from("<I", runs[0]["map"], 4)[0] == 1,
           "after": after["offset"] != (1 << 64) - 1}
    os.close(dev.fd)
    return out


def huge_bo(arg: dict) -> dict:
    """CREATE_BO with sizes no buffer can have, then ordinary buffers and their info."""
    dev = Device()
    dev.bo(BO_HEAP, HEAP)
    sizes = {"share_max": (BO_SHARE, (1 << 64) - 1), "cmd_max": (BO_CMD, (1 << 64) - 1),
             "dev_max": (BO_DEV, (1 << 64) - 1), "share_zero": (BO_SHARE, 0),
             "share_2_63": (BO_SHARE, 1 << 63), "share_2_50": (BO_SHARE, 1 << 50),
             "share_64g": (BO_SHARE, 1 << 36),
             "flags": None}
    out = {}
    for name, shape in sizes.items():
        if shape is None:
            out[name] = errno_of(lambda: dev.ioctl(CREATE_BO, "<QQQII", 1, 0, 4096, BO_SHARE, 0))
        else:
            kind, size = shape
            out[name] = errno_of(lambda k=kind, n=size: dev.ioctl(CREATE_BO, "<QQQII", 0, 0, n,
                                                                  k, 0))
    later = [dev.bo(BO_SHARE, 4096), dev.bo(BO_DEV, 4096)]
    out["later"] = [(b["addr"] < (1 << 48), b["handle"] > 0) for b in later]
    os.close(dev.fd)
    return out


def duplicated(arg: dict) -> dict:
    """A device fd duplicated (dup, fcntl F_DUPFD_CLOEXEC as Python's os.dup, dup2) is the
    same device file: ioctls and mmaps through the copy work after the original is closed,
    and the file lives until the last copy is closed."""
    dev = Device()
    bo = dev.bo(BO_SHARE, 4096)
    bo["map"][:4] = b"same"
    copy = os.dup(dev.fd)
    spare = os.open("/dev/null", os.O_RDONLY)
    os.dup2(copy, spare)
    os.close(dev.fd)
    dev.fd = copy
    seen = dev.ioctl(GET_BO_INFO, "<QQIIQQQ", 0, 0, bo["handle"], 0, 0, 0, 0)[4]
    with mmap.mmap(spare, PAGE, offset=seen) as view:
        through_dup2 = bytes(view[:4])
    os.close(copy)
    dev.fd = spare
    still = dev.bo(BO_SHARE, 4096)["handle"] > 0
    os.close(spare)
    return {"offset": seen == bo["offset"], "through_dup2": through_dup2.decode(),
            "still": still}


def forked(arg: dict) -> dict:
    """fork while other threads use the device: the child's own ioctls work (it starts
    with no connection of its parent's, and the library's lock free)."""
    import threading
    dev = Device()
    stop = threading.Event()

    def busy() -> None:
        while not stop.is_set():
            firmware(dev)
    workers = [threading.Thread(target=busy) for _ in range(3)]
    for worker in workers:
        worker.start()
    statuses = []
    for _ in range(20):
        pid = os.fork()
        if pid == 0:
            try:
                child = Device()
                child.bo(BO_SHARE, 4096)
                os._exit(0)
            except BaseException:
                os._exit(1)
        statuses.append(os.waitpid(pid, 0)[1])
    stop.set()
    for worker in workers:
        worker.join()
    os.close(dev.fd)
    return {"children": statuses}


def wait_forever(arg: dict) -> dict:
    """Wait on a syncobj nothing signals, with no deadline: says "waiting" on stderr, then
    reports how the wait ended (a signal, an errno)."""
    dev = Device()
    handle = dev.ioctl(iowr(0xBF, 8), "<II", 0, 0)[0]                      # SYNCOBJ_CREATE
    sys.stderr.write("waiting\n")
    sys.stderr.flush()
    started = time.monotonic()
    try:
        result = {"wait": dev.wait(handle, 1, None)}
    except KeyboardInterrupt:
        result = {"interrupted": True}
    result["seconds"] = round(time.monotonic() - started, 1)
    result["later"] = errno_of(lambda: firmware(dev))
    return result


def firmware(dev: Device) -> list[int]:
    fw = (ctypes.c_uint32 * 4)()
    dev.ioctl(GET_INFO, "<IIQ", 8, 16, ctypes.addressof(fw))
    return list(fw)


SCENARIOS = {"chains": run_chains, "contexts": contexts, "no_heap": no_heap, "share": share,
             "syncobjs": syncobjs, "discovery": lambda arg: discovery(),
             "freed_while_running": freed_while_running, "huge_bo": huge_bo,
             "duplicated": duplicated, "forked": forked, "wait_forever": wait_forever,
             "identity": identity}


if __name__ == "__main__":
    print(json.dumps([SCENARIOS[name](arg) for name, arg in json.loads(sys.argv[1])]))
