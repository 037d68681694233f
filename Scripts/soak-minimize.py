#!/usr/bin/env python3
"""soak-minimize.py TRACE.sh OUT.sh [mode]: shortens a trace Scripts/soak.py wrote for a violation.
mode dryrun (default): the final step's `sync --dry-run X` and `sync X` exit codes differ.
Removes whole steps (ddmin-like), then single lines, keeping the setup (step 0) and the final step.
"""
import re, subprocess, sys, os, shutil, glob

src, dst = sys.argv[1], sys.argv[2]
mode = sys.argv[3] if len(sys.argv) > 3 else "dryrun"
lines = open(src).read().split("\n")
hdr_end = next(i for i, l in enumerate(lines) if l.startswith("#STEP"))
header = lines[:hdr_end]
steps = []
for l in lines[hdr_end:]:
    if l.startswith("#STEP"):
        steps.append([l])
    elif l.strip():
        steps[-1].append(l)
setup, body, final = steps[0], steps[1:-1], steps[-1]
# keep the final step only up to the real sync
fin = []
for l in final:
    fin.append(l)
    if re.search(r" sync( --[\w-]+)*; echo", l) and "--dry-run" not in l:
        break
final = fin
runs = 0
TRY = "/tmp/tidemark-soak-min-%d.sh" % os.getpid()


def test(body_steps, tries=2):
    global runs
    script = "\n".join(header + setup + [l for st in body_steps for l in st] + final + ["rm -rf $D"]) + "\n"
    with open(TRY, "w") as f:
        f.write(script)
    for _ in range(tries):
        runs += 1
        p = subprocess.run(["bash", TRY], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
        out = p.stdout.decode(errors="replace")
        rcs = re.findall(r"rc=(\d+) <- \S+ -C \S+ sync((?: --[\w-]+)*)\s*$", out, re.M)
        if mode == "dryrun" and len(rcs) >= 2:
            (d, df), (r, rf) = rcs[-2], rcs[-1]
            if "--dry-run" in df and "--dry-run" not in rf and d != r and d in "01" and r in "01":
                return True
    return False


assert test(body, tries=3), "does not reproduce"
n = 2
while len(body) >= 2:
    chunk = max(1, len(body) // n)
    removed = False
    i = 0
    while i < len(body):
        cand = body[:i] + body[i + chunk:]
        if test(cand):
            body = cand
            removed = True
        else:
            i += chunk
    if not removed:
        if chunk == 1:
            break
        n = min(n * 2, len(body))
    print(f"steps left {len(body)} (runs {runs})", flush=True)
# single lines inside remaining steps
flat = [[l] for st in body for l in st if not l.startswith("#STEP")]
i = 0
while i < len(flat):
    cand = flat[:i] + flat[i + 1:]
    if test(cand):
        flat = cand
    else:
        i += 1
# the setup lines too (upstream files not needed)
j = 0
while j < len(setup):
    if setup[j].startswith("printf"):
        saved = setup[:]
        setup = setup[:j] + setup[j + 1:]
        if not test(flat):
            setup = saved
            j += 1
    else:
        j += 1
with open(dst, "w") as f:
    f.write("\n".join(header + setup + [l for st in flat for l in st] + final) + "\n")
print(f"done: {len(flat)} lines in the body, {runs} runs -> {dst}")
