#!/usr/bin/env bash
# The README is a landing page that stays true:
#  - at most 150 lines;
#  - every relative link in README.md and docs/**/*.md resolves to a file or
#    folder of the repository (anchors are ignored);
#  - every `layergate ...` command of its sh blocks runs (in a copy of the seed
#    fixture, with the binary under test): exit 0 or 1 (findings), never 2 or 3;
#    `selftest` may also say 4 (no GPU here);
#  - the console example's lines (after its `$` line, except the `…` line) are
#    lines of the real output of the command it shows.
set -euo pipefail
lg=$(realpath "$1") root=$(realpath "$2")
readme=$root/README.md
fail() { echo "readme_test: $*" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

n=$(wc -l <"$readme")
[ "$n" -le 150 ] || fail "README.md has $n lines (at most 150)"

# --- links -----------------------------------------------------------------
while IFS= read -r md; do
  dir=$(dirname "$md")
  # links outside code: fenced blocks and `inline code` left out
  { awk '/^```/ {code = !code; next} !code' "$md" | sed -E 's/`[^`]*`//g' | grep -oE '\]\([^)#[:space:]]+(#[^)]*)?\)' || true; } | sed -E 's/^\]\(([^)#]+).*$/\1/' | while IFS= read -r target; do
    case $target in http://*|https://*|mailto:*) continue ;; esac
    [ -e "$dir/$target" ] || fail "$(realpath --relative-to="$root" "$md"): link to $target does not resolve"
  done
done < <(printf '%s\n' "$readme"; find "$root/docs" -name '*.md')

# --- commands --------------------------------------------------------------
mkdir -p "$tmp/bin"
ln -s "$lg" "$tmp/bin/layergate"
export PATH=$tmp/bin:$PATH
mapfile -t cmds < <(awk '/^```sh$/ {on=1; next} /^```/ {on=0} on' "$readme" | sed -nE 's/^(layergate[^#]*[^#[:space:]]).*$/\1/p')
[ "${#cmds[@]}" -ge 3 ] || fail "expected layergate commands in README.md's sh blocks, found ${#cmds[@]}"
for c in "${cmds[@]}"; do
  rm -rf "$tmp/seed"
  cp -r "$root/fixtures/seed-force-pcie" "$tmp/seed"
  set +e
  (cd "$tmp/seed" && timeout 300 bash -c "$c" >"$tmp/out" 2>&1)
  rc=$?
  set -e
  case $c in
    layergate\ selftest*) ok='^(0|1|4)$' ;;
    *) ok='^(0|1)$' ;;
  esac
  [[ $rc =~ $ok ]] || { cat "$tmp/out" >&2; fail "\`$c\` exited $rc"; }
done

# --- the console example -----------------------------------------------------
example=$(awk '/^```console$/ {on=1; next} /^```/ {on=0} on' "$readme")
cmdline=$(sed -n 's/^\$ //p' <<<"$example" | head -1)
[ -n "$cmdline" ] || fail "README.md has no console example"
set +e
(cd "$root" && bash -c "${cmdline}") >"$tmp/real" 2>&1
set -e
while IFS= read -r line; do
  case $line in '$ '*|'…'*|'') continue ;; esac
  grep -qxF -- "$line" "$tmp/real" || fail "the README's example line is not in the output of \`$cmdline\`: $line"
done <<<"$example"
echo "readme_test: ok (${#cmds[@]} commands, $n lines)"
