"""The learning curve of benchmarks/learning_from_traffic.py through the real service: `switchboard serve` (API,
store owner, Prefect server, flow runner) serving the default router trained without the benchmark, traffic and
feedback over HTTP, the learn-from-traffic flow queued with `switchboard learning run` and run by Prefect.

    .venv/bin/python -m benchmarks.learning_from_traffic --through-api [--only gsm8k] [--judged 300] [--seeds 1]

For the left-out benchmark (GPT-4-1106 vs Mixtral-8x7B, real per-prompt 0/1 outcomes), per seed:
1. its prompts are shuffled as the in-process mode shuffles them; the last `--judged` are judged, the others are
   the traffic, in order;
2. a preference of its own with `--exploration-rate` (default 0 since issue 33: a caller who never turned it on;
   0.1 before) routes the traffic through modelSelect at
   cost_quality_tradeoff 5 and reports the chosen model's real outcome to the feedback endpoint; whatever the service
   serves at that moment (the router alone, or what the flow promoted: a cluster correction or the nearest-neighbour
   residual that feedback feeds) chooses. A second preference does the same with a fair coin as the label: the
   noise control; with `--labels ...,none` another routes the same traffic and gives no feedback (no flow runs):
   what the service's own dial, recalibrating on the preference's traffic, moves with nothing learned;
3. at each checkpoint (`--checkpoints`, default 0, 250, 500, 1,000, 2,000 feedbacks, as far as the traffic reaches;
   the last one is the rest of the traffic when it is short of 2,000) the flow is queued for
   that preference and waited for; then, with exploration off, the judged prompts are routed at
   cost_quality_tradeoff 0..10 through modelSelect under that preference and APGR (RouteLLM's) is computed from the
   choices, as benchmarks/default_router_unseen.py does; exploration (if any) is switched back on for the next
   traffic.
At the first and the last checkpoint the preference also routes kinds it never had feedback on (`unseen`: 300
prompts of the other of GSM8K and MMLU, and MT-Bench's 80 first turns, judged 1-10, APGR on the mean judge score),
at cost_quality_tradeoff 0..10: their APGR gain over the same preference's first routing of them is what the learner
moved on prompts unlike its feedback (the silent caller of `--labels none` gives the service's own drift there).
Checkpoint 0 is the fresh preference. Printed per checkpoint: the labels the flow read, APGR served and its gain
over fresh, the flow's decision, its doubly robust estimate of the challenger's advantage (95 % interval), the
flow run's seconds, and the strong model's share of the judged prompts at every other setting of the dial.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import numpy as np

from benchmarks.default_router_quality_http import STRONG, WEAK, route_all
from flows.evaluation import curve_from_choices, summarize
from tests.support.service import BIN, Service, free_port, start_service

TRADEOFF = 5
FLOW_TIMEOUT_S = 600
# The API workers follow the store's change feed every 0.5 s (storage/rpc.py) and write event logs in batches a
# second apart (docs/routing.md, "Sessions, privacy and durability"): waited for before the flow reads the feedback
# and before the judged prompts are routed.
FEED_SETTLE_S = 3.0
FINAL = {"COMPLETED", "FAILED", "CRASHED", "CANCELLED"}


def set_exploration(svc: Service, client: httpx.Client, preference: str, rate: float) -> None:
    r = client.put(f"{svc.api_url}/v2/preferences/userPreferenceUpdate", headers=svc.headers,
                   json={"preference_id": preference, "exploration_rate": rate})
    r.raise_for_status()


def send_traffic(svc: Service, preference: str, prompts: list[str], strong: np.ndarray, weak: np.ndarray,
                 coins: np.ndarray | None, feedback: bool = True) -> None:
    """Route each prompt and report its label (the chosen model's real outcome, or the coin; none if not
    `feedback`)."""

    def one(i: int, client: httpx.Client) -> None:
        r = client.post(f"{svc.api_url}/v2/modelRouter/modelSelect", headers=svc.headers,
                        json={"messages": [{"role": "user", "content": prompts[i]}], "llm_providers": [STRONG, WEAK],
                              "cost_quality_tradeoff": TRADEOFF, "preference_id": preference})
        r.raise_for_status()
        body = r.json()
        if not feedback:
            return
        pick = body["providers"][0]
        chose_strong = pick["model"] == STRONG["model"]
        label = int(coins[i]) if coins is not None else int((strong if chose_strong else weak)[i])
        f = client.post(f"{svc.api_url}/v2/report/metrics/feedback", headers=svc.headers,
                        json={"session_id": body["session_id"], "provider": pick, "feedback": {"accuracy": label}})
        f.raise_for_status()

    with httpx.Client(timeout=60, limits=httpx.Limits(max_connections=4)) as client, \
            ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(lambda i: one(i, client), range(len(prompts))))


def run_flow(svc: Service, preference: str) -> tuple[str, float]:
    """Queue learn-from-traffic for the preference with the CLI, wait for Prefect to finish it: (state, seconds)."""
    user, password = svc.prefect_login.split(":", 1)
    env = dict(svc.env, PREFECT_API_URL=svc.prefect_url, PREFECT_API_AUTH_STRING=svc.prefect_login)
    started = time.perf_counter()
    out = subprocess.run([str(BIN / "switchboard"), "learning", "run", "--preference", preference,
                          "--min-new-labels", "1"], env=env, capture_output=True, text=True, timeout=120, check=True)
    run_id = out.stdout.strip().split()[-1]
    deadline = time.monotonic() + FLOW_TIMEOUT_S
    while time.monotonic() < deadline:
        r = httpx.get(f"{svc.prefect_url}/flow_runs/{run_id}", auth=(user, password), timeout=30)
        r.raise_for_status()
        state = (r.json().get("state") or {}).get("type")
        if state in FINAL:
            return state, time.perf_counter() - started
        time.sleep(1.0)
    raise SystemExit(f"flow run {run_id} did not finish within {FLOW_TIMEOUT_S} s")


def latest_version(svc: Service, preference: str) -> dict | None:
    """The newest learned version of the preference, read through the store's owner as the flow writes it."""
    # lazy: the owner's client is only needed once the service runs
    from storage.rpc import RemoteStore

    owner = json.loads((svc.data_dir / "run" / "owner.json").read_text())
    store = RemoteStore(owner["url"], owner["token"])
    try:
        versions = store.learning.versions(preference)
    finally:
        store.close()
    if not versions:
        return None
    v = versions[-1]
    return {"version": v.version_id, "live": v.is_live, "labels": v.labels, **json.loads(v.evaluation)}


def judge(svc: Service, client: httpx.Client, preference: str, prompts: list[str], strong: np.ndarray,
          weak: np.ndarray, rate: float) -> tuple[float, np.ndarray]:
    """(APGR over the dial's 11 settings, the strong model's share at each)."""
    set_exploration(svc, client, preference, 0.0)
    time.sleep(FEED_SETTLE_S)
    choose = route_all(svc.api_url, svc.headers, prompts, preference)
    set_exploration(svc, client, preference, rate)
    apgr = summarize(curve_from_choices(choose, strong, weak), float(weak.mean()), float(strong.mean())).apgr
    return apgr, choose.mean(axis=1)


def route_unseen(svc: Service, client: httpx.Client, preference: str, unseen: dict, rate: float) -> dict[str, float]:
    """APGR of each kind in `unseen` (name -> (prompts, strong, weak)) routed under the preference."""
    return {name: judge(svc, client, preference, prompts, strong, weak, rate)[0]
            for name, (prompts, strong, weak) in unseen.items()}


def one_preference(svc: Service, client: httpx.Client, items, seed: int, judged_n: int,
                   checkpoints: tuple[int, ...], noise: bool, feedback: bool = True,
                   rate: float = 0.0, unseen: dict | None = None) -> list[tuple[int, float, str]]:
    """One simulated caller (its own preference, so its own dial, residual memory and corrections):
    [(feedbacks, APGR served on the judged prompts, the flow's decision)] per checkpoint; the kinds in `unseen` are
    routed at the first and last checkpoint and their gain printed."""
    order = np.random.default_rng(seed).permutation(len(items.prompts))  # the in-process mode's split
    judged, traffic = order[-judged_n:], order[:-judged_n]
    j_prompts = [items.prompts[i] for i in judged]
    s_j, w_j = items.strong[judged], items.weak[judged]
    coins = np.random.default_rng(seed + 1000).integers(0, 2, len(traffic)) if noise else None
    r = client.post(f"{svc.api_url}/v2/preferences/userPreferenceCreate", headers=svc.headers,
                    json={"name": f"learning seed {seed}{' noise' if noise else ''}{'' if feedback else ' silent'}"})
    r.raise_for_status()
    preference = r.json()["preference_id"]
    set_exploration(svc, client, preference, rate)
    rows, fresh, sent, unseen_fresh = [], None, 0, {}
    reached = [n for n in checkpoints if n <= len(traffic)]
    if len(reached) < len(checkpoints) and len(traffic) > reached[-1]:
        reached.append(len(traffic))  # the rest of the traffic: a small benchmark still gets its last checkpoint
    for n in reached:
        t0 = time.perf_counter()
        idx = traffic[sent:n]
        send_traffic(svc, preference, [items.prompts[i] for i in idx], items.strong[idx], items.weak[idx],
                     None if coins is None else coins[sent:n], feedback)
        sent, traffic_s = n, time.perf_counter() - t0
        decision, interval, flow_s, labels = "-", "-", 0.0, 0
        if n and feedback:
            time.sleep(FEED_SETTLE_S)
            state, flow_s = run_flow(svc, preference)
            v = latest_version(svc, preference)
            if state != "COMPLETED" or v is None:
                decision = f"run {state.lower()}" if state != "COMPLETED" else "nothing fitted"
            else:
                d, labels = v["difference"], v["labels"]
                decision = v["decision"] if v["decision"] != "promoted" else \
                    "promoted: " + {"nearest-neighbour residual": "residual", "lexical learner": "lexical"}.get(
                        v.get("kind"), "clusters")
                if v.get("lexical"):
                    lex = v["lexical"]
                    print(f"  seed {seed} lexical learner: replay gain {lex['replay_error_gain']['value']:+.4f} "
                          f"[{lex['replay_error_gain']['low']:+.4f}, {lex['replay_error_gain']['high']:+.4f}], "
                          f"DM difference {lex['dm_difference']['value']:+.4f} [{lex['dm_difference']['low']:+.4f}, "
                          f"{lex['dm_difference']['high']:+.4f}], changes {100 * lex['changed_decisions']:.1f} %, "
                          f"passed {lex['passed']}", flush=True)
                interval = f"{d['value']:+.4f} [{d['low']:+.4f}, {d['high']:+.4f}]"
        apgr, shares = judge(svc, client, preference, j_prompts, s_j, w_j, rate)
        fresh = apgr if fresh is None else fresh
        rows.append((n, apgr - fresh, decision))
        print(f"  seed {seed} {n:>9}  {labels:>6}  {apgr:6.3f} ({apgr - fresh:+.3f})  {decision:<18}  {interval:<26}  "
              f"{flow_s:6.1f}  {traffic_s:9.1f}  {' '.join(f'{x:.2f}' for x in shares[::2])}", flush=True)
        if unseen and n in (reached[0], reached[-1]):
            seen_now = route_unseen(svc, client, preference, unseen, rate)
            unseen_fresh = unseen_fresh if n != reached[0] else seen_now
            print(f"  seed {seed} {n:>9}  kinds without feedback: " + ", ".join(
                f"{k} {v:.3f} ({v - unseen_fresh[k]:+.3f})" for k, v in seen_now.items()), flush=True)
    return [(n, fresh + gain, d) for n, gain, d in rows]


def curve_through_api(name: str, items, router_dir: Path, figures: Path, judged_n: int, checkpoints: tuple[int, ...],
                      seeds: int, labels: tuple[str, ...] = ("real", "random"), first_seed: int = 0,
                      rate: float = 0.0, unseen: dict | None = None) -> None:
    os.environ.update(SWITCHBOARD_DEFAULT_ROUTER_DIR=str(router_dir), SWITCHBOARD_MODEL_FIGURES=str(figures))
    root = Path(tempfile.mkdtemp(prefix="switchboard-learning-api-"))
    started = time.perf_counter()
    svc = start_service(root / "data", free_port(), free_port())
    print(f"\n{name} left out, through the API and Prefect: {len(items.prompts) - judged_n} prompts of traffic, "
          f"{judged_n} judged; exploration_rate {rate}; service up in {time.perf_counter() - started:.0f} s; "
          f"load average {os.getloadavg()[0]:.1f}", flush=True)
    try:
        with httpx.Client(timeout=60) as client:
            modes = {"real": (False, True), "random": (True, True), "none": (False, False)}
            for noise, feedback in [modes[label] for label in labels]:
                kind = "no feedback (the service's drift)" if not feedback else \
                    "random labels (noise control)" if noise else "real outcomes (bandit feedback)"
                print(f"  {kind}", flush=True)
                print(f"  {'':6} {'feedbacks':>9}  {'fitted':>6}  {'served APGR':>15}  {'flow decision':<18}  "
                      f"{'DR difference [95 %]':<26}  {'flow s':>6}  {'traffic s':>9}  "
                      "strong share at t = 0, 2, .., 10", flush=True)
                runs = [one_preference(svc, client, items, seed, judged_n, checkpoints, noise, feedback, rate, unseen)
                        for seed in range(first_seed, first_seed + seeds)]
                print(f"  mean of {seeds} seed(s): APGR served (gain over the fresh preference), flows that promoted")
                for k, (n, _, _) in enumerate(runs[0]):
                    apgr = np.mean([run[k][1] for run in runs])
                    gain = np.mean([run[k][1] - run[0][1] for run in runs])
                    promoted = sum(run[k][2].startswith("promoted") for run in runs)
                    print(f"  {n:>9}  {apgr:6.3f} ({gain:+.3f})  {promoted}/{len(runs) if n else 0}", flush=True)
    finally:
        svc.stop()
        shutil.rmtree(root, ignore_errors=True)
    print(f"  ({time.perf_counter() - started:.0f} s in all; load average {os.getloadavg()[0]:.1f})", flush=True)
