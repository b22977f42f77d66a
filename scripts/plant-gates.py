#!/usr/bin/env python3
"""plant-gates.py TREE [--layergate BIN] [--rounds N] [--tsv OUT] [--repo NAME]

Recall of the gates layergate finds from the code (`check --list-gates`), on a
real tree. For each analysed gate that admits a configuration its C++ entry
serves, plants a rejection of exactly that configuration in the entry: right
after the entry's opening brace, on the same line (no line moves),

    TORCH_CHECK(!(group_size == 64), "layergate plant");

A plant is found exactly when the gate then has an error that names the
planted values and rejects at the planted line. Each round plants in distinct
entries at once (one run of the tool per round); every file is restored after
each round, and a last run checks the tree gives the baseline's output byte
for byte (the reversal is clean and the output deterministic).

Writes one row per plant (repo, op, gate, entry line, values, found, why) to
--tsv and prints a summary line. The tree is edited in place and restored:
give it an exported copy, never a checkout with work in it.
"""
import argparse
import json
import os
import subprocess
import sys


def run(lg, tree):
    p = subprocess.run([lg, "check", ".", "--list-gates", "--format", "json"], cwd=tree,
                       capture_output=True, text=True, timeout=1800)
    if p.returncode != 0:
        sys.exit(f"plant-gates.py: layergate exited {p.returncode}: {p.stderr.strip()[:300]}")
    return p.stdout


def key(g):
    return f"{g['file']}:{g['line']}:{g['column']}"


def insert_at(text, line, stmt):
    """text with stmt inserted after the body's `{` on 1-based line (None if none)."""
    lines = text.split("\n")
    if line < 1 or line > len(lines):
        return None
    l = lines[line - 1]
    close = l.rfind(")")
    brace = l.find("{", close + 1 if close >= 0 else 0)
    if brace < 0:
        brace = l.find("{")
    if brace < 0:
        return None
    lines[line - 1] = l[: brace + 1] + " " + stmt + l[brace + 1 :]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("tree")
    ap.add_argument("--layergate", default=os.environ.get("LAYERGATE", "build/tool/layergate"))
    ap.add_argument("--rounds", type=int, default=3, help="plants per entry at most (one per round)")
    ap.add_argument("--tsv", default=None)
    ap.add_argument("--repo", default=os.path.basename(os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")))
    a = ap.parse_args()
    lg = os.path.abspath(a.layergate)
    base_text = run(lg, a.tree)
    base = json.loads(base_text)
    # Candidates: analysed gates with no error, each admitted-and-served example once.
    cands = []
    already = 0
    for g in base["gates"]:
        an = g.get("analysis")
        if not an or not g.get("entry"):
            continue
        if an["errors"]:
            already += 1
            continue
        for ex in an["served"]:
            cands.append((g, ex))
    cands.sort(key=lambda c: (key(c[0]), json.dumps(c[1], sort_keys=True)))
    rows = []
    planted_keys = set()
    for rnd in range(a.rounds):
        # One plant per entry this round: the first candidate of each not planted yet.
        batch = {}
        for g, ex in cands:
            ent = (g["entry"]["file"], g["entry"]["body_line"])
            pk = (key(g), json.dumps(ex, sort_keys=True))
            if ent in batch or pk in planted_keys:
                continue
            # Gates already planted in an earlier round are skipped for a
            # fresh one where the entry has another.
            batch[ent] = (g, ex, pk)
        if not batch:
            break
        originals = {}
        try:
            for (f, line), (g, ex, pk) in sorted(batch.items()):
                path = os.path.join(a.tree, f)
                if path not in originals:
                    with open(path, encoding="utf-8", errors="surrogateescape") as fh:
                        originals[path] = fh.read()
                cond = " && ".join(f"{v['expr']} == {v['cpp']}" for v in ex)
                stmt = f'TORCH_CHECK(!({cond}), "layergate plant");'
                with open(path, encoding="utf-8", errors="surrogateescape") as fh:
                    text = fh.read()
                new = insert_at(text, line, stmt)
                if new is None:
                    rows.append((a.repo, g["op"], key(g), f"{f}:{line}", cond, "skipped", "no brace on the entry's line"))
                    planted_keys.add(pk)
                    continue
                with open(path, "w", encoding="utf-8", errors="surrogateescape") as fh:
                    fh.write(new)
            after = json.loads(run(lg, a.tree))
        finally:
            for path, text in originals.items():
                with open(path, "w", encoding="utf-8", errors="surrogateescape") as fh:
                    fh.write(text)
        by_key = {key(g): g for g in after["gates"]}
        for (f, line), (g, ex, pk) in sorted(batch.items()):
            if pk in planted_keys:
                continue
            planted_keys.add(pk)
            cond = " && ".join(f"{v['expr']} == {v['cpp']}" for v in ex)
            h = by_key.get(key(g))
            an = h.get("analysis") if h else None
            why = ""
            if not an:
                why = "not analysed after the plant: " + (h["reason"] if h else "gate gone")
            elif not an["errors"]:
                possible = [d for d in an["diagnostics"] if " LG008 " in d and "layergate plant" in d]
                why = ("a possible gap only (LG008): " + possible[0].split("depends on", 1)[-1].strip()[:200]
                       if possible else "no error")
            elif f"{f}:{line}" not in an["rejected_at"]:
                why = "error not at the planted line: " + ",".join(an["rejected_at"])
            else:
                diags = [d for d in an["diagnostics"] if " LG002 " in d or " LG001 " in d]
                if not any(all(str(v["value"]) in d for v in ex) for d in diags):
                    why = "planted values not named: " + " | ".join(diags[:2])
            rows.append((a.repo, g["op"], key(g), f"{f}:{line}", cond, "found" if not why else "missed", why))
    final = run(lg, a.tree)
    clean = final == base_text
    if a.tsv:
        with open(a.tsv, "w") as fh:
            for r in rows:
                fh.write("\t".join(r) + "\n")
    planted = [r for r in rows if r[5] != "skipped"]
    found = sum(r[5] == "found" for r in planted)
    ops = len({r[1] for r in planted})
    pct = 100.0 * found / len(planted) if planted else 0.0
    print(f"{a.repo}: {len(planted)} plants over {ops} ops: {found} found exactly ({pct:.1f}%); "
          f"{len(rows) - len(planted)} skipped; {already} gates with an error before planting; "
          f"reversal {'clean' if clean else 'NOT clean'} (output after restoring {'identical' if clean else 'differs'})")
    return 0 if clean else 1


if __name__ == "__main__":
    sys.exit(main())
