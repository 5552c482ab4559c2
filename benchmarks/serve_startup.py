"""How long `switchboard serve` takes to print "all running", and the resident memory of all its processes once
idle. With --baseline REF the same is measured for that commit (its files exported with `git archive`, run with
the same virtual environment), alternating with this checkout, so both meet the same machine load.

    .venv/bin/python -m benchmarks.serve_startup [--baseline d61def1] [--rounds 2] [--idle 20]

Each round is a first start on an empty data dir (Prefect creates its database, the first admin key is issued),
then a second start on the same data dir. Targets (docs/benchmarks.md): <= 30 s to "all running" on a quiet
machine, <= 700 MiB idle over every process.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.service import free_port, read_until_running

REPO = Path(__file__).resolve().parents[1]

READY = re.compile(r"\[switchboard\] (.+?) ready in ([\d.]+)s")


@dataclass
class Start:
    all_running_s: float
    ready_s: dict[str, float]
    rss_mib: dict[str, float] = field(default_factory=dict)  # process description -> MiB

    @property
    def total_mib(self) -> float:
        return sum(self.rss_mib.values())


def descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        for task in Path(f"/proc/{p}/task").glob("*"):
            try:
                todo.extend(int(c) for c in (task / "children").read_text().split())
            except (FileNotFoundError, ProcessLookupError):
                pass
    return out


def describe(pid: int) -> str:
    argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    words = [a.decode(errors="replace") for a in argv if a]
    for marker, name in (("owner_app", "store owner"), ("api.app", "API"), ("flows.runner", "flow runner"),
                         ("server", "Prefect server"), ("serve", "supervisor")):
        if any(marker in w for w in words[1:]):
            break
    else:
        name = " ".join(w.rsplit("/", 1)[-1] for w in words[:3])
    return f"{name} ({pid})"


def rss_mib(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    found = re.search(r"VmRSS:\s+(\d+)", status)
    return int(found.group(1)) / 1024 if found else 0.0


def start_once(source: Path, data_dir: Path, idle_s: float, timeout: float = 300) -> Start:
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env.update(SWITCHBOARD_DATA_DIR=str(data_dir), SWITCHBOARD_PREFECT_PORT=str(free_port()),
               LITELLM_LOCAL_MODEL_COST_MAP="True", PYTHONPATH=str(source))
    started = time.monotonic()
    process = subprocess.Popen([sys.executable, "-m", "api.cli.main", "serve", "--port", str(free_port())],
                               cwd=source, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        try:
            lines = read_until_running(process, timeout)
        except AssertionError as exc:
            raise SystemExit(str(exc)) from None
        result = Start(time.monotonic() - started,
                       {m.group(1): float(m.group(2)) for m in map(READY.search, lines) if m})
        time.sleep(idle_s)  # what an idle service holds, after start-up's transient work
        for pid in descendants(process.pid):
            try:
                result.rss_mib[describe(pid)] = rss_mib(pid)
            except (FileNotFoundError, ProcessLookupError):
                pass
        return result
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=90)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def by_role(start: Start) -> dict[str, list[float]]:
    """MiB of each part of `serve` (its processes in start order: granian's main process before its worker)."""
    parts: dict[str, list[float]] = {}
    for name, mib in sorted(start.rss_mib.items(), key=lambda item: int(item[0].rsplit("(", 1)[1].rstrip(")"))):
        parts.setdefault(name.rsplit(" (", 1)[0], []).append(mib)
    return parts


def median_parts(starts: list[Start]) -> str:
    """Each part's MiB, median over the starts, per process; a part whose process count changed is left out."""
    roles = [by_role(s) for s in starts]
    shown = []
    for role, mibs in roles[-1].items():
        if all(len(r.get(role, ())) == len(mibs) for r in roles):
            shown.append(f"{role} " + "+".join(f"{statistics.median(r[role][i] for r in roles):.0f}"
                                               for i in range(len(mibs))))
    return ", ".join(shown)


def export(ref: str, into: Path) -> Path:
    archive = into / "source.tar"
    subprocess.run(["git", "archive", "--format=tar", "-o", str(archive), ref], cwd=REPO, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into / "source", filter="data")
    return into / "source"


def summary(label: str, starts: list[Start]) -> None:
    for kind, picked in (("first start", starts[0::2]), ("second start", starts[1::2])):
        if not picked:
            continue
        times = [s.all_running_s for s in picked]
        ready = {name: statistics.median(s.ready_s.get(name, 0.0) for s in picked) for name in picked[0].ready_s}
        print(f"{label:>9} {kind:12}: all running median {statistics.median(times):5.1f} s "
              f"(runs: {', '.join(f'{t:.1f}' for t in times)}); ready in "
              + ", ".join(f"{name} {s:.1f} s" for name, s in ready.items()))
    idle = [s.total_mib for s in starts]
    print(f"{label:>9} idle RSS: median {statistics.median(idle):.0f} MiB over {len(starts[-1].rss_mib)} processes "
          "(last start: " + ", ".join(f"{name} {mib:.0f}" for name, mib in starts[-1].rss_mib.items()) + ")")
    print(f"{label:>9} idle RSS per part, median over {len(starts)} starts (a granian main process and its worker "
          f"as a+b): {median_parts(starts)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", help="a git ref to measure alongside this checkout")
    parser.add_argument("--rounds", type=int, default=2, help="first+second starts per build (default 2)")
    parser.add_argument("--idle", type=float, default=20.0, help="seconds idle before reading memory")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="serve-startup-") as tmp:
        builds = {"this": REPO}
        if args.baseline:
            builds = {"baseline": export(args.baseline, Path(tmp)), **builds}
        results: dict[str, list[Start]] = {label: [] for label in builds}
        load = [os.getloadavg()[0]]
        for round_no in range(args.rounds):
            for label, source in builds.items():
                data_dir = Path(tmp) / f"data-{label}-{round_no}"
                for _ in ("first", "second"):
                    results[label].append(start_once(source, data_dir, args.idle))
                    load.append(os.getloadavg()[0])
        print(f"load average (1 min) during the run: {min(load):.1f}-{max(load):.1f} on {os.cpu_count()} CPUs")
        for label, starts in results.items():
            summary(label, starts)
        if args.baseline:
            first = [statistics.median(s.all_running_s for s in results[lb][0::2]) for lb in ("this", "baseline")]
            second = [statistics.median(s.all_running_s for s in results[lb][1::2]) for lb in ("this", "baseline")]
            mem = [statistics.median(s.total_mib for s in results[lb]) for lb in ("this", "baseline")]
            print(f"this / baseline: first start {first[0] / first[1]:.2f}, second start {second[0] / second[1]:.2f}, "
                  f"idle RSS {mem[0] / mem[1]:.2f}")


if __name__ == "__main__":
    main()
