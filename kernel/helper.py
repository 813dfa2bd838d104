# nvim-claude kernel helper: one Jupyter kernel, driven by the Go host over
# JSON lines on stdin/stdout. Embedded in the host binary and run as
# `python3 -c <this file>`; it must only need the standard library plus
# jupyter_client and ipykernel (Debian: python3-jupyter-client,
# python3-ipykernel).
#
# Requests:  {"id": n, "op": "start", "kernel": "python3", "cwd": "/dir"}
#            {"id": n, "op": "execute", "code": "...", "timeout": secs, "max_output": chars}
#            {"id": n, "op": "interrupt" | "restart" | "shutdown"}
# Replies:   {"id": n, "ok": true, ...} or {"id": n, "ok": false, "error": "..."}
# Events:    {"event": "ready", "python": ..., "jupyter_client": ...} first, or
#            {"event": "fatal", "kind": "missing", "module": ...} and exit 3.
#
# The helper ends (and takes its kernel with it) when stdin closes: the host
# exiting, however it exits, closes the pipe.
import json
import os
import re
import sys
import threading
import time

# Our stdout is the protocol channel: keep a private copy and point fd 1 at
# stderr, so nothing a child (the kernel) or a library prints can corrupt it.
_proto = os.fdopen(os.dup(1), "w", encoding="utf-8")
os.dup2(2, 1)
sys.stdout = sys.stderr
_out_lock = threading.Lock()
# The kernel inherits this; it silences a debugger warning ipykernel prints
# on Python 3.11 at every start.
os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")


def send(obj):
    line = json.dumps(obj, ensure_ascii=False)
    with _out_lock:
        _proto.write(line + "\n")
        _proto.flush()


try:
    import jupyter_client
    from jupyter_client.manager import KernelManager
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel
    import ipykernel  # noqa: F401  (the default kernel; checked up front for a clear error)
except ImportError as e:  # pragma: no cover - exercised through the Go tests
    send({"event": "fatal", "kind": "missing", "module": getattr(e, "name", None) or str(e),
          "python": sys.executable, "error": str(e)})
    sys.exit(3)

ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07")


def clean(s):
    return ANSI.sub("", s)


class Output:
    """Collects a run's outputs, text capped at max_output characters."""

    def __init__(self, max_output):
        self.max = max_output if max_output and max_output > 0 else 0
        self.items = []
        self.used = 0
        self.omitted = 0
        self.images_omitted = 0
        self.image_bytes = 0

    def text(self, kind, s, name=None):
        s = clean(s)
        if not s:
            return
        if self.max:
            room = self.max - self.used
            if room <= 0:
                self.omitted += len(s)
                return
            if len(s) > room:
                self.omitted += len(s) - room
                s = s[:room]
        self.used += len(s)
        last = self.items[-1] if self.items else None
        if kind == "stream" and last and last["type"] == "stream" and last.get("name") == name:
            last["text"] += s
            return
        item = {"type": kind, "text": s}
        if name:
            item["name"] = name
        self.items.append(item)

    def image(self, data):
        data = "".join(data.split())
        # An image is worth keeping whole or not at all; 8 MB of base64 in
        # total is far more than a model needs.
        if self.image_bytes + len(data) > 8 * 1024 * 1024:
            self.images_omitted += 1
            return
        self.image_bytes += len(data)
        self.items.append({"type": "image", "data": data, "mimeType": "image/png"})

    def data(self, kind, bundle):
        if "image/png" in bundle:
            self.image(bundle["image/png"])
            return
        text = bundle.get("text/plain")
        if text is not None:
            self.text(kind, text if text.endswith("\n") else text + "\n")

    def clear(self):
        self.items = []
        self.used = 0


class Helper:
    def __init__(self):
        self.km = None
        self.kc = None
        self.kernel_name = None
        self.lock = threading.Lock()  # km / kc operations
        self.run_thread = None
        self.abort = threading.Event()  # restart / shutdown while running
        self.user_interrupt = threading.Event()
        self.busy = False  # a run is in progress (set and cleared on the main thread's side of the reply)

    # -- operations ------------------------------------------------------
    def op_start(self, req):
        name = req.get("kernel") or "python3"
        cwd = req.get("cwd") or None
        if cwd and not os.path.isdir(cwd):
            cwd = None
        ksm = KernelSpecManager()
        try:
            spec = ksm.get_kernel_spec(name)
        except NoSuchKernel:
            names = sorted(ksm.find_kernel_specs().keys())
            return {"ok": False, "kind": "no_kernel",
                    "error": "no Jupyter kernel named %r is installed (installed: %s)" % (name, ", ".join(names) or "none")}
        env = dict(os.environ)
        env.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
        env.setdefault("PYTHONUNBUFFERED", "1")
        km = KernelManager(kernel_name=name)
        try:
            km.start_kernel(cwd=cwd, env=env)
            kc = km.client()
            kc.start_channels()
            kc.wait_for_ready(timeout=float(req.get("timeout") or 60))
        except Exception as e:
            try:
                km.shutdown_kernel(now=True)
            except Exception:
                pass
            return {"ok": False, "kind": "start_failed", "error": "the %s kernel did not start: %s" % (name, e)}
        with self.lock:
            self.km, self.kc, self.kernel_name = km, kc, name
        return {"ok": True, "kernel_pid": self.kernel_pid(), "language": spec.language,
                "display_name": spec.display_name}

    def kernel_pid(self):
        km = self.km
        for obj in (getattr(km, "provisioner", None), km):
            proc = getattr(obj, "process", None) or getattr(obj, "kernel", None)
            pid = getattr(proc, "pid", None)
            if pid:
                return pid
            pid = getattr(obj, "pid", None)
            if isinstance(pid, int):
                return pid
        return 0

    def op_interrupt(self, req):
        if not self.km:
            return {"ok": False, "error": "no kernel"}
        running = self.busy
        if running:
            self.user_interrupt.set()
        self.km.interrupt_kernel()
        return {"ok": True, "running": running}

    def stop_run(self):
        t = self.run_thread
        if t is not None and t.is_alive():
            self.abort.set()
            t.join(10)
        self.abort.clear()

    def op_restart(self, req):
        if not self.km:
            return {"ok": False, "error": "no kernel"}
        self.stop_run()
        try:
            self.km.restart_kernel(now=True)
            self.kc.wait_for_ready(timeout=60)
        except Exception as e:
            return {"ok": False, "error": "restart failed: %s" % e}
        return {"ok": True, "kernel_pid": self.kernel_pid()}

    def shutdown(self):
        self.stop_run()
        with self.lock:
            km, kc = self.km, self.kc
            self.km = self.kc = None
        if kc is not None:
            try:
                kc.stop_channels()
            except Exception:
                pass
        if km is not None:
            try:
                km.shutdown_kernel(now=True)
            except Exception:
                pass

    def op_execute(self, req, reply):
        if not self.kc:
            reply({"ok": False, "error": "no kernel"})
            return
        if self.busy:
            reply({"ok": False, "error": "the kernel is busy with another run"})
            return
        if self.run_thread is not None:
            self.run_thread.join()  # it has replied; it is only returning
        self.busy = True
        self.user_interrupt.clear()
        t = threading.Thread(target=self.run, args=(req, reply), daemon=True)
        self.run_thread = t
        t.start()

    # -- a run -------------------------------------------------------------
    def run(self, req, reply):
        try:
            res = self.collect(req)
        except Exception as e:  # never leave the host waiting
            res = {"ok": False, "error": "executeCode failed in the helper: %r" % (e,)}
        # Not busy before the host hears the reply: its next request may
        # come at once.
        self.busy = False
        reply(res)

    def collect(self, req):
        kc, km = self.kc, self.km
        timeout = float(req.get("timeout") or 0)
        out = Output(int(req.get("max_output") or 0))
        # Drain what an earlier, abandoned run left behind.
        while True:
            try:
                kc.get_iopub_msg(timeout=0)
            except Exception:
                break
        msg_id = kc.execute(req.get("code", ""), store_history=True, allow_stdin=False, stop_on_error=False)
        start = time.monotonic()
        deadline = start + timeout if timeout > 0 else None
        status = "ok"
        error = None
        count = None
        interrupted_at = last_signal = None
        while True:
            if self.abort.is_set():
                status = "aborted"
                break
            now = time.monotonic()
            if deadline is not None and interrupted_at is None and now >= deadline:
                status = "timeout"
                interrupted_at = last_signal = now
                km.interrupt_kernel()
            if interrupted_at is None and self.user_interrupt.is_set():
                status = "interrupted"
                interrupted_at = last_signal = now
            if interrupted_at is not None:
                if now - interrupted_at > 10:
                    status = "stuck"
                    break
                # A SIGINT that lands before the kernel started on the
                # code is lost: repeat it until the run ends.
                if now - last_signal >= 1.5:
                    last_signal = now
                    km.interrupt_kernel()
            wait = 0.5
            if deadline is not None and interrupted_at is None:
                wait = max(0.01, min(wait, deadline - now))
            try:
                msg = kc.get_iopub_msg(timeout=wait)
            except Exception:
                if not km.is_alive():
                    status = "died"
                    break
                continue
            if msg.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            t = msg["msg_type"]
            c = msg["content"]
            if t == "status":
                if c.get("execution_state") == "idle":
                    break
            elif t == "execute_input":
                count = c.get("execution_count")
            elif t == "stream":
                out.text("stream", c.get("text", ""), c.get("name", "stdout"))
            elif t == "execute_result":
                count = c.get("execution_count", count)
                out.data("result", c.get("data", {}))
            elif t in ("display_data", "update_display_data"):
                out.data("display", c.get("data", {}))
            elif t == "error":
                error = {"ename": c.get("ename", ""), "evalue": clean(c.get("evalue", "")),
                         "traceback": clean("\n".join(c.get("traceback", [])))}
            elif t == "clear_output":
                out.clear()
        if self.user_interrupt.is_set() and status in ("ok", "timeout"):
            status = "interrupted" if status == "ok" else status
        return {"ok": True, "status": status, "items": out.items, "error": error,
                "execution_count": count, "omitted_chars": out.omitted,
                "omitted_images": out.images_omitted,
                "elapsed": round(time.monotonic() - start, 3)}


def main():
    h = Helper()
    send({"event": "ready", "python": sys.executable, "jupyter_client": jupyter_client.__version__})
    try:
        for line in sys.stdin:
            line = line.strip()
            if not line:
                continue
            try:
                req = json.loads(line)
            except ValueError as e:
                send({"event": "bad_request", "error": str(e)})
                continue
            rid = req.get("id")

            def reply(res, rid=rid):
                res["id"] = rid
                send(res)

            op = req.get("op")
            try:
                if op == "execute":
                    h.op_execute(req, reply)
                elif op == "start":
                    reply(h.op_start(req))
                elif op == "interrupt":
                    reply(h.op_interrupt(req))
                elif op == "restart":
                    reply(h.op_restart(req))
                elif op == "shutdown":
                    h.shutdown()
                    reply({"ok": True})
                    return
                else:
                    reply({"ok": False, "error": "unknown op %r" % (op,)})
            except Exception as e:
                reply({"ok": False, "error": "%s: %r" % (op, e)})
    finally:
        h.shutdown()


if __name__ == "__main__":
    import signal
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
    # The host may get SIGINT from a terminal's Ctrl-C; that is not for us.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    main()
