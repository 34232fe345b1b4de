# tfcluster's warm interpreter (elastic/src/prewarm/bootstrap.py, run as `python -c`).
#
# argv: a mode, MODULES (comma-separated), then the task's own target: `SCRIPT ARGS...` or
# `-m MODULE ARGS...`. Mode `find` prints `MODULE<TAB>ERROR` for the first module that
# cannot be found from the target's sys.path, and exits. Mode `warm` imports MODULES while
# the agent waits for a round, tells the agent on fd 0 (a socket) a JSON line,
# {"ready": ...} or {"failed": MODULE, "error": TEXT}, then waits there for the round's JSON
# line {"env": {...}} and runs the target as `python SCRIPT ARGS...` would. Its output until
# then is kept in files and written to the task's pipes at the handoff, so the agent need
# not read them before it knows the task's name.
import os
import sys
import time

_STARTED = time.time()
# How much of each stream printed during the imports is written out at the handoff.
_HELD_BYTES = 64 * 1024


def _send(message):
    import json

    data = (json.dumps(message) + "\n").encode()
    while data:
        data = data[os.write(0, data) :]


def _receive():
    import json

    line = b""
    while not line.endswith(b"\n"):
        chunk = os.read(0, 65536)
        if not chunk:
            # The agent is gone: nothing to run.
            os._exit(0)
        line += chunk
    return json.loads(line)


def _hold_output():
    import tempfile

    saved, held = [], []
    for fd in (1, 2):
        saved.append(os.dup(fd))
        held.append(tempfile.TemporaryFile())
        os.dup2(held[-1].fileno(), fd)
    return saved, held


def _release_output(saved, held):
    for stream in (sys.stdout, sys.stderr):
        if stream is not None:
            stream.flush()
    for fd, kept, file in zip((1, 2), saved, held):
        os.dup2(kept, fd)
        os.close(kept)
        size = file.seek(0, 2)
        file.seek(max(0, size - _HELD_BYTES))
        data = file.read()
        file.close()
        while data:
            data = data[os.write(fd, data) :]


def _script_path0(target):
    # What `python SCRIPT` puts first on sys.path: the script's real directory (`-m`: the
    # working directory); nothing under -P or -I.
    if target[0] == "-m":
        return os.getcwd()
    return os.path.dirname(os.path.realpath(target[0]))


def _run(target):
    if target[0] == "-m":
        import runpy

        sys.argv = ["-m"] + target[2:]
        runpy._run_module_as_main(target[1], alter_argv=True)
        return
    sys.argv = list(target)
    path = os.path.abspath(target[0])
    if not os.path.isfile(path):
        # A directory or a zip with __main__.py, or nothing: runpy says as python does.
        import runpy

        try:
            runpy.run_path(path, run_name="__main__")
        except OSError as e:
            print(
                f"{sys.executable}: can't open file {path!r}: [Errno {e.errno}] {e.strerror}",
                file=sys.stderr,
            )
            sys.exit(2)
        return
    import builtins
    import importlib.machinery
    import io
    import types

    main = types.ModuleType("__main__")
    main.__file__ = path
    main.__cached__ = None
    main.__loader__ = importlib.machinery.SourceFileLoader("__main__", path)
    main.__builtins__ = builtins
    sys.modules["__main__"] = main
    with io.open_code(path) as file:
        code = compile(file.read(), path, "exec")
    exec(code, main.__dict__)


def _find(modules):
    import importlib.util

    for module in modules:
        try:
            found = importlib.util.find_spec(module) is not None
            error = "" if found else f"ModuleNotFoundError: No module named {module!r}"
        except BaseException as e:
            error = f"{type(e).__name__}: {e}"
        if error:
            print(module + "\t" + error.replace("\n", " "))
            return


def _prewarm(modules):
    import importlib

    for module in modules:
        before = set(sys.modules)
        try:
            importlib.import_module(module)
        except BaseException as e:
            import traceback

            # What the failed import left is dropped, so the script imports it afresh (and
            # fails as it would cold); the interpreter still takes its round.
            for name in set(sys.modules) - before:
                del sys.modules[name]
            error = "".join(traceback.format_exception_only(type(e), e)).strip()
            _send({"failed": module, "error": error})
            return
    _send({"ready": True, "import_s": time.time() - _STARTED})


def _main():
    mode = sys.argv[1]
    modules = [m for m in sys.argv[2].split(",") if m]
    target = sys.argv[3:]
    saved, held = _hold_output() if mode == "warm" else (None, None)
    if not sys.flags.safe_path and sys.path and sys.path[0] == "":
        sys.path[0] = _script_path0(target)
    if mode == "find":
        _find(modules)
        return
    _prewarm(modules)
    env = _receive()["env"]
    # os.environ's items go to the C environment too: TensorFlow reads TF_CONFIG there.
    os.environ.update(env)
    os.environ["TFCLUSTER_WARM"] = "%.6f" % _STARTED
    _release_output(saved, held)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    if os.environ.get("PYTHONFAULTHANDLER") and not sys.flags.ignore_environment:
        import faulthandler

        faulthandler.enable()
    try:
        _run(target)
    except SystemExit:
        raise
    except BaseException as e:
        # As python prints an uncaught exception: without this bootstrap's frames.
        tb = e.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename == "<string>":
            tb = tb.tb_next
        sys.excepthook(type(e), e.with_traceback(tb), tb)
        if isinstance(e, KeyboardInterrupt):
            # python ends by SIGINT then, so its parent sees the signal.
            import atexit
            import signal

            atexit._run_exitfuncs()
            for stream in (sys.stdout, sys.stderr):
                if stream is not None:
                    stream.flush()
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGINT)
        sys.exit(1)


_main()
