"""Run `dagster dev` so that Ctrl-C and SIGTERM both stop it cleanly, also in the background.

`dagster dev` shuts its webserver, daemon and code server down on KeyboardInterrupt, but a
SIGTERM kills it on the spot (orphaning them), and a background job of a non-interactive
shell starts with SIGINT ignored. This wrapper starts it in its own process group with
SIGINT restored and turns SIGINT and SIGTERM into one SIGINT for it. The warm Spark engine
is not stopped: it stops after its idle timeout, or with `assetlake engine stop`.

    python scripts/dagster_dev.py -w workspace.yaml -h 127.0.0.1 -p 3000
"""

import os
import signal
import subprocess
import sys


def main() -> int:
    dagster = os.path.join(os.path.dirname(sys.executable), "dagster")

    def restore_sigint() -> None:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)

    child = subprocess.Popen([dagster, "dev", *sys.argv[1:]], preexec_fn=restore_sigint, process_group=0)
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
