#!/usr/bin/env bash
# The README's picture: the lead section of a run's report.html (the answer: a sentence per workload
# and the table of each variant's cost × native, with its plots), screenshot by headless Chromium.
# Usage: scripts/readme-picture.sh RESULTS_DIR [OUT.png]   (default OUT: docs/answer.png)
# Make it from a real quick run: `cargo run --release -p wasmlab -- run --suite quick`, then
# `scripts/readme-picture.sh results/<run-id>`. Needs Chromium (`apt-get install chromium`).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:?usage: scripts/readme-picture.sh RESULTS_DIR [OUT.png]}
out=${2:-docs/answer.png}
report=$dir/report.html
[ -f "$report" ] || { echo "no report.html in $dir (a results directory of wasmlab run)" >&2; exit 2; }
browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
[ -n "$browser" ] || { echo "no Chromium here: apt-get install chromium" >&2; exit 2; }
# Only the title and the lead, at the page's width.
page=$(mktemp -d)
trap 'rm -rf "$page"' EXIT
python3 - "$report" "$page/lead.html" <<'PY'
import re, sys
html = open(sys.argv[1], encoding="utf-8").read()
# The page's head (its styles), its title, and the answer's section; the rest is left out.
anchor = html.find('<h2 id="answer"')
if anchor < 0:
    sys.exit("report.html has no answer section (made by an older wasmlab?)")
start = html.rfind("<section", 0, anchor)
end = html.find("</section>", anchor) + len("</section>")
title_start = html.find("<h1")
title_end = html.find("</h1>") + len("</h1>")
body_open = html.find(">", html.find("<body")) + 1
# The whole table in view: no page width limit, no scrolling box.
wide = "<style>main{max-width:none}.scroll{overflow-x:visible}</style>"
lead = (html[:body_open] + wide + "<main>" + html[title_start:title_end] + html[start:end]
        + "</main></body></html>")
open(sys.argv[2], "w", encoding="utf-8").write(lead)
PY
"$browser" --headless --no-sandbox --disable-gpu --no-first-run --disable-background-networking \
  --disable-component-update --disable-sync --user-data-dir="$page/profile" --hide-scrollbars \
  --window-size="${WIDTH:-1900}","${HEIGHT:-1500}" --screenshot="$out" "file://$(realpath "$page/lead.html")" 2>/dev/null
echo "wrote $out from $report"
