#!/usr/bin/env python3
"""The bench's `dir` upstream, in the current folder: `items.py generate N` writes N items of about
1 KB into up/00..up/99; `items.py change N K R` changes K of them for round R (a new lastModified,
and a `rev` field) and lists their paths in changed.txt. Deterministic: the same arguments give the
same files."""
import json
import os
import sys


def generate(n):
    for i in range(n):
        shard = f"up/{i % 100:02d}"
        if i < 100:
            os.makedirs(shard, exist_ok=True)
        body = {"id": f"item-{i:06d}", "lastModified": "2024-01-01T00:00:00Z", "name": f"Item {i}",
                "text": ("lorem ipsum dolor sit amet " * 34)[:900]}
        with open(f"{shard}/item-{i:06d}.json", "w") as f:
            json.dump(body, f, indent=2, sort_keys=True)
            f.write("\n")


def change(n, k, r):
    with open("changed.txt", "w") as changed:
        for j in range(k):
            i = (j * 97 + r) % n
            p = f"up/{i % 100:02d}/item-{i:06d}.json"
            d = json.load(open(p))
            d["lastModified"] = f"2025-01-{1 + r % 28:02d}T00:00:{j % 60:02d}Z"
            d["rev"] = r
            with open(p, "w") as f:
                json.dump(d, f, indent=2, sort_keys=True)
                f.write("\n")
            changed.write(p + "\n")


if __name__ == "__main__":
    if sys.argv[1] == "generate":
        generate(int(sys.argv[2]))
    else:
        change(*map(int, sys.argv[2:5]))
