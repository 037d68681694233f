#!/usr/bin/env python3
"""Randomized consistency soak for tidemark (dir: upstream, a mirror + a git clone of it).

usage: soak.py SEED [STEPS] [WORKDIR]   (make soak runs SOAK_SEEDS seeds of SOAK_STEPS steps;
SOAK_UPKEEP=1 sets gc.auto and gc.autoPackLimit to 1, so every run packs and combines objects)
Random steps: upstream edits, creates, deletes and touches; local edits, untracked files, git
commit/amend/revert/stash/reset/pull between the clones; tidemark fetch, sync (--offline,
--force), rollback; SIGTERM and SIGKILL of a sync at a random moment. Checked after each step:
the dry run exits as the sync does, a sync without --force that exits 0 keeps local edits and
untracked files, a successful sync leaves the items equal to upstream, git fsck --strict passes,
no index.lock is left, exit codes are 0, 1, 128 or 129. Prints violations as JSON lines
("VIOLATION ...", each with a replayable shell trace; Scripts/soak-minimize.py shortens one) and
a summary at the end. Written by a tester in session 23.
"""
import json, os, random, shutil, signal, subprocess, sys, time

TM = os.environ.get("TM", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".build", "release", "tidemark"))
SEED = int(sys.argv[1]) if len(sys.argv) > 1 else 1
STEPS = int(sys.argv[2]) if len(sys.argv) > 2 else 300
BASE = sys.argv[3] if len(sys.argv) > 3 else f"/tmp/tidemark-soak/s{SEED}"
VERBOSE = os.environ.get("SOAK_VERBOSE") == "1"

rng = random.Random(SEED)
env = dict(os.environ)
env.update(GIT_AUTHOR_NAME="q", GIT_AUTHOR_EMAIL="q@x", GIT_COMMITTER_NAME="q",
           GIT_COMMITTER_EMAIL="q@x", HOME=BASE + "/home", GIT_CONFIG_NOSYSTEM="1",
           NO_COLOR="1", GIT_EDITOR="true", GIT_MERGE_AUTOEDIT="no")
env.pop("GIT_DIR", None)

shutil.rmtree(BASE, ignore_errors=True)
os.makedirs(BASE + "/home")
if os.environ.get("SOAK_UPKEEP") == "1":
    # Object store upkeep at every run that moves a ref (tidemark's, and git's own gc --auto, kept in
    # the foreground: a detached one races the fsck checks).
    with open(BASE + "/home/.gitconfig", "w") as config:
        config.write("[gc]\n\tauto = 1\n\tautoPackLimit = 1\n\tautoDetach = false\n")
UP = BASE + "/up"
os.makedirs(UP)
REPOS = [BASE + "/m", BASE + "/c"]
violations = []
trace = []        # (step, shell line)
import shlex
def T(line):
    trace.append((step_no, line.replace(BASE, "$D").replace(TM, "$TM")))
def Tcmd(args, cwd):
    T(shlex.join(args) + "; echo \"rc=$? <- " + shlex.join(args[:6]).replace('"', "'").replace("$", "") + "\"")
def dump_trace(name):
    path = f"{BASE}-{name}.sh"
    with open(path, "w") as f:
        f.write("#!/bin/bash\nTM=${TM:-.build/release/tidemark}\nD=$(mktemp -d /tmp/tidemark-soak-replay.XXXXXX)\n"
                "export GIT_AUTHOR_NAME=q GIT_AUTHOR_EMAIL=q@x GIT_COMMITTER_NAME=q GIT_COMMITTER_EMAIL=q@x HOME=$D GIT_CONFIG_NOSYSTEM=1 GIT_EDITOR=true\n"
                "mkdir -p $D/up; cd $D\n")
        last = None
        for st, line in trace:
            if st != last:
                f.write(f"#STEP {st}\n"); last = st
            f.write(line + "\n")
    return path
log = []          # (step, repo, cmd, rc)
step_no = 0
tm_calls = 0


def enc(idstr):
    out = []
    for ch in idstr:
        if ch.isascii() and (ch.islower() or ch.isdigit() or ch in "_-.+"):
            out.append(ch)
        elif ch.isascii() and ch.isupper():
            out.append("^" + ch.lower())
        else:
            out.extend("%%%02x" % b for b in ch.encode())
    return "".join(out)


ID_POOL = ["it%02d" % i for i in range(60)] + ["Big%02d" % i for i in range(6)] + ["sp ace%d" % i for i in range(4)]


def run(args, cwd=None, check_tm=True, timeout=60, traced=False):
    global tm_calls
    if traced:
        Tcmd(args, cwd)
    p = subprocess.run(args, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    out, err = p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")
    if args[0] == TM:
        tm_calls += 1
        if check_tm and p.returncode not in (0, 1, 128, 129):
            violate("exit-code", f"{args[1:]} exited {p.returncode}", out=out, err=err)
    log.append((step_no, cwd, " ".join(args[1:] if args[0] == TM else args), p.returncode))
    if VERBOSE:
        print(f"  [{step_no}] {os.path.basename(cwd or '')}: {' '.join(a if a != TM else 'tm' for a in args)} -> {p.returncode}", flush=True)
        if args[0] == TM and (err.strip()) and p.returncode != 0:
            print("     " + err.strip().replace("\n", "\n     ")[:600], flush=True)
    return p.returncode, out, err


def tm(repo, *a, **kw):
    return run([TM, "-C", repo] + list(a), cwd=repo, traced=True, **kw)


def git(repo, *a, traced=False):
    return run(["git", "-C", repo] + list(a), cwd=repo, traced=traced)


def violate(kind, msg, **extra):
    v = dict(seed=SEED, step=step_no, kind=kind, msg=msg)
    v.update({k: (x[:1500] if isinstance(x, str) else x) for k, x in extra.items()})
    violations.append(v)
    v["trace"] = dump_trace(f"v{len(violations)}-step{step_no}-{kind}")
    print("VIOLATION " + json.dumps(v), flush=True)


# ---------------- upstream -----------------
def rand_value():
    t = rng.random()
    if t < 0.3:
        return rng.randint(-1000, 10**6)
    if t < 0.5:
        return rng.choice(["x", "y", "héllo", "a\"b", "", "tab\tx"])
    if t < 0.6:
        return [rng.randint(0, 9) for _ in range(rng.randint(0, 3))]
    if t < 0.7:
        return {"k%d" % rng.randint(0, 3): rng.randint(0, 5)}
    if t < 0.8:
        return rng.choice([True, False, None, 1.5, 2.50])
    return "v%d" % rng.randint(0, 10**6)


def rand_doc(idstr):
    d = {"id": idstr}
    for _ in range(rng.randint(1, 5)):
        d[rng.choice(["name", "b", "a", "zeta", "Body", "n"])] = rand_value()
    return d


def write_up(idstr, d):
    path = os.path.join(UP, idstr + ".json")
    style = rng.random()
    if style < 0.4:
        s = json.dumps(d, sort_keys=True, indent=2, ensure_ascii=False) + "\n"
    elif style < 0.7:
        s = json.dumps(d, separators=(",", ":"), ensure_ascii=False)
    else:
        keys = list(d.keys()); rng.shuffle(keys)
        s = json.dumps({k: d[k] for k in keys}, indent=rng.choice([None, 1, 4]), ensure_ascii=False)
    with open(path, "w") as f:
        f.write(s)
    T("printf %s " + shlex.quote(s) + " > " + shlex.quote(path))


def up_items():
    res = {}
    for n in os.listdir(UP):
        if n.endswith(".json"):
            with open(os.path.join(UP, n), "rb") as f:
                res[n[:-5]] = json.loads(f.read())
    return res


def up_op():
    ids = sorted(up_items().keys())
    r = rng.random()
    absent = [i for i in ID_POOL if i not in ids]
    if (r < 0.2 and len(ids) < 50 and absent) or len(ids) < 20:
        i = rng.choice(absent); write_up(i, rand_doc(i)); return f"up create {i}"
    if r < 0.6:
        i = rng.choice(ids); write_up(i, rand_doc(i)); return f"up edit {i}"
    if r < 0.75 and len(ids) > 20:
        i = rng.choice(ids); os.unlink(os.path.join(UP, i + ".json")); T("rm " + shlex.quote(os.path.join(UP, i + ".json"))); return f"up delete {i}"
    if r < 0.85:
        i = rng.choice(ids); os.utime(os.path.join(UP, i + ".json")); T("touch " + shlex.quote(os.path.join(UP, i + ".json"))); return f"up touch {i}"
    # same bytes rewritten (cp without -p)
    i = rng.choice(ids); p = os.path.join(UP, i + ".json")
    b = open(p, "rb").read(); open(p, "wb").write(b); T(f"cat {shlex.quote(p)} > $D/tmpf && cat $D/tmpf > {shlex.quote(p)}"); return f"up rewrite-same {i}"


# ---------------- repo helpers -----------------
def head_items(repo, rev="HEAD"):
    rc, out, _ = git(repo, "ls-tree", "-r", "--name-only", rev, "--", "items")
    return out.split() if rc == 0 else []


def git_status(repo):
    """paths differing from HEAD (index or worktree) or untracked: {path: code}"""
    p = subprocess.run(["git", "status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames"],
                       cwd=repo, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    res = {}
    if p.returncode != 0:
        return None
    parts = p.stdout.decode("utf-8", "surrogateescape").split("\0")
    for e in parts:
        if len(e) > 3:
            res[e[3:]] = e[:2]
    return res


def read_bytes(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        return b"<dir>"


def snapshot_edits(repo):
    st = git_status(repo)
    if st is None:
        return None
    journal = read_bytes(repo + "/.git/tidemark/sync-journal")
    # the snapshot a killed sync was checking out (the journal's second field)
    target = journal.split()[1].decode() if journal and len(journal.split()) == 3 else None
    snap = {}
    for p, code in st.items():
        b = read_bytes(os.path.join(repo, p))
        if target and b is not None:
            # A file a killed sync wrote is no user edit: whole, or torn (written in place over a
            # longer one and killed before the cut: the new bytes, then the old file's tail; or
            # created and killed before all was written: the first bytes alone, or none).
            rc, out, _ = run(["git", "cat-file", "-p", target + ":" + p], cwd=repo)
            if rc == 0 and (b.startswith(out.encode()) or out.encode().startswith(b)):
                continue
        snap[p] = (code, b)
    return snap


def check_repo_health(repo, where):
    rc, out, err = run(["git", "fsck", "--strict", "--no-progress"], cwd=repo)
    if rc != 0:
        violate("fsck", f"git fsck --strict failed ({where}) in {os.path.basename(repo)}", out=out, err=err)


def index_lock_text(repo):
    try:
        with open(repo + "/.git/index.lock", "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None


def check_no_lock(repo, what, before=None):
    """Flags an index.lock the step left. One an earlier SIGKILL left (`before`, its text) that a
    run killed before its clean-up got to it still holds is not the step's: it stays, for the
    next run to remove."""
    text = index_lock_text(repo)
    if text is None or (before is not None and text == before):
        return
    violate("index.lock", f".git/index.lock left after {what} in {os.path.basename(repo)}")
    os.unlink(repo + "/.git/index.lock")


def item_files(repo):
    res = []
    d = os.path.join(repo, "items")
    for root, dirs, files in os.walk(d):
        for f in files:
            res.append(os.path.relpath(os.path.join(root, f), repo))
    return res


def parse_or_none(b):
    try:
        return json.loads(b)
    except Exception:
        return "<unparseable>"


# per-repo state
killed9 = {r: False for r in REPOS}


def do_sync(repo, flags):
    """dry-run then real sync, with invariant checks."""
    force = "--force" in flags
    offline = "--offline" in flags
    pre = snapshot_edits(repo)
    head_before = git(repo, "rev-parse", "HEAD")[1].strip()
    drc, dout, derr = tm(repo, "sync", "--dry-run", *flags)
    # dry run must change nothing
    head_mid = git(repo, "rev-parse", "HEAD")[1].strip()
    if head_mid != head_before:
        violate("dry-run-changed", f"sync --dry-run {flags} moved HEAD {head_before}->{head_mid}")
    pre2 = snapshot_edits(repo)
    if pre is not None and pre2 is not None and pre2 != pre:
        violate("dry-run-changed", f"sync --dry-run {flags} changed the working tree",
                diff=str(set(pre) ^ set(pre2)))
    rc, out, err = tm(repo, "sync", *flags)
    if drc in (0, 1) and rc in (0, 1) and drc != rc:
        violate("dry-run-mismatch", f"sync --dry-run {' '.join(flags)} exited {drc}, sync exited {rc}",
                dry_out=dout, dry_err=derr, out=out, err=err)
    if rc in (0, 1):
        check_no_lock(repo, "sync " + " ".join(flags))
        killed9[repo] = False
    if rc == 1 and pre is not None:
        head_after = git(repo, "rev-parse", "HEAD")[1].strip()
        post = snapshot_edits(repo)
        if head_after != head_before or post != pre:
            violate("refusal-changed", f"sync {flags} refused (1) but changed HEAD or the working tree",
                    head=f"{head_before}->{head_after}", diff=str(set(pre or {}) ^ set(post or {})), err=err)
    if drc != rc and "Revert \"" in err + derr + out + dout:
        violations[-1]["kind"] = "dry-run-mismatch-revert" if violations and violations[-1]["kind"] == "dry-run-mismatch" else violations[-1]["kind"]
    if rc == 0 and os.path.exists(repo + "/.git/tidemark/sync-journal"):
        violate("journal-left", f"sync {flags} exited 0 but the sync journal remains")
    after_checks(repo, "sync", flags, rc, pre, out, err, head_before)
    return rc


def manifest_lines(data):
    """A manifest's item lines as id field -> line, and its other lines (header, comments) in order."""
    entries, others = {}, []
    for line in (data or b"").split(b"\n"):
        if line and not line.startswith(b"#"):
            entries[line.split(b"\t")[0]] = line
        else:
            others.append(line)
    return entries, others


def manifest_changes_kept(repo, path, base_rev, ours, now):
    """Whether every item line `ours` (a manifest git changed) changes from base_rev's is in `now`,
    byte for byte, and its other lines are base_rev's: a run writes over such a manifest then
    (tidemark compares manifests item by item)."""
    if not base_rev or not (path.startswith(".tidemark/") and path.endswith(".manifest")):
        return False
    # As bytes: an id need not be UTF-8.
    shown = subprocess.run(["git", "cat-file", "-p", base_rev + ":" + path], cwd=repo, env=env, capture_output=True)
    (mine, mine_others), (old, old_others) = manifest_lines(ours), manifest_lines(shown.stdout if shown.returncode == 0 else b"")
    new = manifest_lines(now)[0]
    return mine_others == old_others and all(new.get(i) == mine.get(i) for i in set(mine) | set(old) if mine.get(i) != old.get(i))


def after_checks(repo, cmd, flags, rc, pre, out, err, base_rev=None):
    force = "--force" in flags
    if rc == 0 and not force and pre is not None:
        for p, (code, b) in pre.items():
            now = read_bytes(os.path.join(repo, p))
            if now != b and not manifest_changes_kept(repo, p, base_rev, b, now):
                kind = "untracked-lost" if code == "??" else "local-edit-lost"
                violate(kind, f"{cmd} {' '.join(flags)} exited 0 and changed {p} (git status '{code}') "
                              f"{b[:80] if b else b!r} -> {now[:80] if now else now!r}", out=out, err=err)
    if cmd == "sync" and rc == 0:
        if "--offline" not in flags:
            up = up_items()
            want = {"items/" + enc(i) + ".json": d for i, d in up.items()}
            have = set(head_items(repo))
            if have != set(want):
                violate("head-not-upstream", f"after sync {flags} HEAD items differ from upstream",
                        missing=str(sorted(set(want) - have)), extra=str(sorted(have - set(want))), out=out, err=err)
            for p, d in want.items():
                if p in have:
                    r2, blob, _ = git(repo, "show", "HEAD:" + p)
                    if parse_or_none(blob.encode()) != d:
                        violate("head-not-upstream", f"after sync {flags} HEAD:{p} != upstream", head=blob[:300],
                                up=json.dumps(d)[:300], out=out, err=err)
                if force or pre is None or p not in pre:
                    b = read_bytes(os.path.join(repo, p))
                    if b is None or parse_or_none(b) != d:
                        # with --force an edit of an item the sync did not change may stay
                        if not (force and pre is not None and p in pre):
                            violate("worktree-not-upstream", f"after sync {flags} {p} in the working tree != upstream",
                                    file=(b or b"<missing>")[:300].decode(errors="replace"), up=json.dumps(d)[:300],
                                    out=out, err=err)
            for p in item_files(repo):
                if p not in want and (pre is None or p not in pre):
                    violate("worktree-extra", f"after sync {flags} {p} remains in the working tree (not upstream)", out=out, err=err)
        else:
            h = git(repo, "rev-parse", "HEAD^{tree}")[1].strip()
            u = git(repo, "rev-parse", "refs/tidemark/upstream^{tree}")[1].strip()
            if h != u:
                violate("offline-not-upstream-ref", f"after sync --offline HEAD tree {h} != tidemark/upstream tree {u}", out=out, err=err)
        if pre is not None and not pre:
            r3, po, pe = tm(repo, "status", "--porcelain")
            if r3 != 0 or po.strip():
                violate("status-not-clean", f"status --porcelain after clean sync {flags}: rc={r3} {po.strip()[:400]}", err=pe)
            gs = git_status(repo)
            if gs:
                violate("git-status-not-clean", f"git status after clean sync {flags}: {gs}")


def do_rollback(repo, args):
    pre = snapshot_edits(repo)
    head_before = git(repo, "rev-parse", "HEAD")[1].strip()
    rc, out, err = tm(repo, "rollback", *args)
    if rc in (0, 1):
        check_no_lock(repo, "rollback")
        killed9[repo] = False
    after_checks(repo, "rollback", args, rc, pre, out, err, head_before)


def do_kill(repo):
    sig = rng.choice([signal.SIGTERM, signal.SIGKILL])
    flags = rng.choice([[], [], ["--offline"], ["--force"]])
    delay = rng.uniform(0, 0.05)
    head_before = git(repo, "rev-parse", "HEAD")[1].strip()
    lock_before = index_lock_text(repo)
    T(f"$TM -C {repo} sync {' '.join(flags)} >/dev/null 2>&1 & p=$!; sleep {delay:.3f}; kill -{sig.name[3:]} $p; wait $p; echo killed rc=$?")
    p = subprocess.Popen([TM, "-C", repo, "sync"] + flags, cwd=repo, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    time.sleep(delay)
    try:
        p.send_signal(sig)
    except ProcessLookupError:
        pass
    out, err = p.communicate()
    rc = p.returncode
    log.append((step_no, repo, f"sync {flags} killed {sig.name} after {delay:.3f}", rc))
    if VERBOSE:
        print(f"  [{step_no}] {os.path.basename(repo)}: sync {flags} + {sig.name} after {delay:.3f}s -> {rc}", flush=True)
    if rc >= 0:
        if rc not in (0, 1, 128, 129):
            violate("exit-code", f"sync {flags} exited {rc}", err=err.decode(errors="replace"))
        if rc in (0, 1):
            check_no_lock(repo, "sync that ended normally")
            killed9[repo] = False
        return f"kill {sig.name} too late (rc={rc})"
    if -rc == signal.SIGTERM:
        check_no_lock(repo, "SIGTERM", before=lock_before)
        killed9[repo] = True   # may leave a journal
    else:
        killed9[repo] = True
    return f"killed {sig.name} after {delay:.3f}s"


def local_op(repo):
    other = REPOS[1] if repo == REPOS[0] else REPOS[0]
    files = item_files(repo)
    r = rng.random()
    up_ids = list(up_items().keys())
    if r < 0.03 and files:
        # Every item file rewritten with its own bytes (a copy without -p, a restore): all
        # stat-dirty, none changed; a mirror of 32 or more takes the hashing without filters.
        for p in files:
            full = os.path.join(repo, p)
            if os.path.islink(full) or not os.path.isfile(full):
                continue
            data = read_bytes(full)
            if data is None:
                continue
            with open(full, "wb") as f:
                f.write(data)
        T("find " + shlex.quote(os.path.join(repo, "items")) + """ -type f -exec sh -c 'cp "$1" "$1.t" && cat "$1.t" > "$1" && rm "$1.t"' _ {} \\;""")
        return f"rewrite all {len(files)}"
    if r < 0.14 and files:
        p = rng.choice(files)
        c = rng.choice(['{"local": %d}\n' % rng.randint(0, 999), "garbage %d\n" % rng.randint(0, 999)])
        with open(os.path.join(repo, p), "w") as f:
            f.write(c)
        T("printf %s " + shlex.quote(c) + " > " + shlex.quote(os.path.join(repo, p)))
        return f"edit {p}"
    if r < 0.20 and files:
        p = rng.choice(files); os.unlink(os.path.join(repo, p)); T("rm " + shlex.quote(os.path.join(repo, p))); return f"rm {p}"
    if r < 0.28:
        head = set(head_items(repo))
        cand = ["items/" + enc(i) + ".json" for i in (up_ids + ID_POOL)]
        cand = [c for c in cand if c not in head and not os.path.exists(os.path.join(repo, c))]
        if rng.random() < 0.15:
            cand = ["items/notes.txt", "scratch.txt"]
        if cand:
            p = rng.choice(cand[:10] if rng.random() < 0.6 else cand)
            os.makedirs(os.path.dirname(os.path.join(repo, p)) or repo, exist_ok=True)
            c = '{"untracked": %d}\n' % rng.randint(0, 999)
            with open(os.path.join(repo, p), "w") as f:
                f.write(c)
            T("mkdir -p " + shlex.quote(os.path.dirname(os.path.join(repo, p))) + "; printf %s " + shlex.quote(c) + " > " + shlex.quote(os.path.join(repo, p)))
            return f"untracked {p}"
    ops = [
        ("add", lambda: git(repo, "add", "-A", traced=True)),
        ("commit -am", lambda: git(repo, "commit", "-qam", "user %d" % step_no, traced=True)),
        ("commit", lambda: git(repo, "commit", "-qm", "user staged %d" % step_no, traced=True)),
        ("amend", lambda: git(repo, "commit", "-q", "--amend", "--no-edit", "-a", traced=True)),
        ("amend -m", lambda: git(repo, "commit", "-q", "--amend", "-m", "reworded %d" % step_no, traced=True)),
        ("revert", lambda: git(repo, "revert", "--no-edit", "HEAD", traced=True)),
        ("stash", lambda: git(repo, "stash", "-q", "-u" if rng.random() < 0.3 else "-q", traced=True)),
        ("stash pop", lambda: git(repo, "stash", "pop", "-q", traced=True)),
        ("reset --soft", lambda: git(repo, "reset", "-q", "--soft", "HEAD~1", traced=True)),
        ("reset --hard", lambda: git(repo, "reset", "-q", "--hard", "HEAD~1", traced=True)),
        ("reset --hard HEAD", lambda: git(repo, "reset", "-q", "--hard", "HEAD", traced=True)),
        ("pull --ff-only", lambda: git(repo, "pull", "-q", "--ff-only", other, "main", traced=True)),
        ("pull --rebase", lambda: git(repo, "pull", "-q", "--rebase", other, "main", traced=True)),
        ("checkout --", lambda: git(repo, "checkout", "--", rng.choice(files), traced=True) if files else (0, "", "")),
        ("clean", lambda: git(repo, "clean", "-fdq", traced=True)),
    ]
    weights = [3, 3, 1, 2, 2, 2, 2, 2, 2, 1, 1, 3, 2, 3, 1]
    name, fn = rng.choices(ops, weights)[0]
    rc = fn()[0]
    if name == "pull --rebase" and rc != 0:
        git(repo, "rebase", "--abort", traced=True)
    if name == "revert" and rc != 0 and rng.random() < 0.7:
        git(repo, "revert", "--abort", traced=True)
    return f"git {name} -> {rc}"


def tm_op(repo):
    r = rng.random()
    if r < 0.12:
        rc = tm(repo, "fetch")[0]
        if rc in (0, 1):
            killed9[repo] = False
        return f"fetch -> {rc}"
    if r < 0.45:
        return f"sync -> {do_sync(repo, [])}"
    if r < 0.60:
        return f"sync --offline -> {do_sync(repo, ['--offline'])}"
    if r < 0.72:
        return f"sync --force -> {do_sync(repo, ['--force'])}"
    if r < 0.80:
        do_rollback(repo, ["HEAD~1"]); return "rollback HEAD~1"
    if r < 0.86:
        do_rollback(repo, ["HEAD~1", "--hard"]); return "rollback --hard"
    if r < 0.90:
        rc, out, err = tm(repo, "status", "--porcelain"); return f"status -> {rc}"
    return do_kill(repo)


def main():
    global step_no
    for i in range(rng.randint(20, 40)):
        idx = ID_POOL[i] if rng.random() < 0.9 else rng.choice(ID_POOL[60:])
        write_up(idx, rand_doc(idx))
    rc, out, err = run([TM, "clone", "-q", "dir:" + UP, REPOS[0]], cwd=BASE, traced=True)
    assert rc == 0, err
    rc, out, err = run(["git", "clone", "-q", REPOS[0], REPOS[1]], cwd=BASE, traced=True)
    assert rc == 0, err
    git(REPOS[1], "config", "tidemark.upstream", "dir:" + UP, traced=True)
    t0 = time.time()
    for step_no in range(1, STEPS + 1):
        repo = rng.choice(REPOS)
        if any(killed9.values()) and rng.random() < 0.5:
            repo = [r for r in REPOS if killed9[r]][0]
            desc = "after kill: sync -> %s" % do_sync(repo, rng.choice([[], ["--offline"]]))
        else:
            k = rng.random()
            if k < 0.25:
                desc = up_op()
            elif k < 0.60:
                desc = local_op(repo)
            else:
                desc = tm_op(repo)
        if VERBOSE:
            print(f"[{step_no}] {os.path.basename(repo)} {desc}", flush=True)
        for r in REPOS:
            check_repo_health(r, desc)
    print(json.dumps(dict(seed=SEED, steps=STEPS, tm_calls=tm_calls, violations=len(violations),
                          kinds=sorted({v["kind"] for v in violations}), secs=round(time.time() - t0, 1))), flush=True)


main()
