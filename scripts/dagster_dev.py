"""Run `dagster dev` so that Ctrl-C and SIGTERM both stop it cleanly, also in the background.

`dagster dev` shuts its webserver, daemon and code server down on KeyboardInterrupt, but a
SIGTERM kills it on the spot (orphaning them), and a background job of a non-interactive
shell starts with SIGINT ignored. This wrapper starts it in its own process group with
SIGINT restored and turns SIGINT and SIGTERM into one SIGINT for it. The warm Spark engine
is not stopped: it stops after its idle timeout, or with `assetlake engine stop`.

    python scripts/dagster_dev.py -w workspace.yaml -h 127.0.0.1 -p 3000

It also hides the one warning `dagster dev` prints at start ("Function `dev_command` is
superseded ... Use 'dg dev' instead."): it tells users of `dagster dev` about Dagster's
newer `dg` CLI, which this project does not use (its code location is a workspace.yaml, not a
`dg` project), so it is noise for our users. Only that message is filtered, through
PYTHONWARNINGS (the child is a separate process); every other warning still shows.
"""

import os
import signal
import subprocess
import sys


#: The `-W` filter for Dagster's SupersessionWarning (a FutureWarning) on `dagster dev`.
DEV_SUPERSEDED_FILTER = "ignore:Function `dev_command` is superseded:FutureWarning"


def child_env(environ: dict) -> dict:
    """``environ`` plus :data:`DEV_SUPERSEDED_FILTER` in ``PYTHONWARNINGS`` (kept: the user's own filters).

    Example:
        >>> child_env({"PYTHONWARNINGS": "error"})["PYTHONWARNINGS"]
        'error,ignore:Function `dev_command` is superseded:FutureWarning'
    """
    filters = [f for f in environ.get("PYTHONWARNINGS", "").split(",") if f]
    return {**environ, "PYTHONWARNINGS": ",".join([*filters, DEV_SUPERSEDED_FILTER])}


def main() -> int:
    dagster = os.path.join(os.path.dirname(sys.executable), "dagster")

    def restore_sigint() -> None:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)

    child = subprocess.Popen(
        [dagster, "dev", *sys.argv[1:]], preexec_fn=restore_sigint, process_group=0, env=child_env(dict(os.environ))
    )
    stopping = []

    def forward(signum: int, _frame: object) -> None:
        if not stopping:
            print(f"dagster_dev.py: {signal.Signals(signum).name}: stopping dagster dev …", file=sys.stderr, flush=True)
        stopping.append(signum)
        if len(stopping) > 3:  # asked four times: stop waiting
            os.killpg(child.pid, signal.SIGKILL)
        else:
            child.send_signal(signal.SIGINT)

    signal.signal(signal.SIGINT, forward)
    signal.signal(signal.SIGTERM, forward)
    code = child.wait()
    return 0 if stopping else code


if __name__ == "__main__":
    sys.exit(main())
