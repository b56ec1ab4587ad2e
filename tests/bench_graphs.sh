# bench_graphs.sh: the graphs make bench times and make cachestat counts (POSIX sh, sourced), so
# both report on the same set: the 5 largest schedule graphs of the corpus (by uop count, INDEX.tsv
# column 4) and testdata/models/*.graph.json.
# bench_graphs ORACLE: their paths, one a line
bench_graphs() {
  awk -F '\t' 'NR > 1 && $1 == "schedule" { print $4 "\t" $2 }' "$1/INDEX.tsv" | sort -t "$(printf '\t')" -k1,1nr -k2,2 |
    head -5 | while IFS="$(printf '\t')" read -r _ name; do echo "$1/schedule/$name.graph.json"; done
  for f in testdata/models/*.graph.json; do [ -f "$f" ] && echo "$f"; done
}
# bench_row_name PATH: the graph's name for a report row, at most 44 characters (its middle elided)
bench_row_name() {
  name=$(basename "$1" .graph.json)
  if [ ${#name} -gt 44 ]; then name=$(printf '%s' "$name" | cut -c1-20)...$(printf '%s' "$name" | rev | cut -c1-21 | rev); fi
  printf '%s' "$name"
}
