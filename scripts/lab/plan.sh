# The run's plan (RUNDIR/plan), sourced by scripts/lab.sh, which writes it,
# and scripts/lab/guest.sh, which reads it. One line per test binary, six
# tab-separated fields:
#
#   NAME  PKGDIR  PKG  TESTS  FABRICTESTS  LEAFSPINETESTS
#
# TESTS are the tests of the package's *_lab_test.go files, FABRICTESTS
# those of its *_fabric_lab_test.go files, LEAFSPINETESTS those of its
# *_leafspine_lab_test.go files, each '|'-joined, and "-" when
# there are none: never an empty field, because bash's read with
# IFS=$'\t' counts a tab as whitespace and merges the tabs around an empty
# field (a package with fabric tests only would have them read as its
# single-host tests). labreport reads the first three fields.

# plan_add FILE NAME PKGDIR PKG TESTS FABRICTESTS LEAFSPINETESTS appends
# one line.
plan_add() {
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$2" "$3" "$4" "${5:--}" "${6:--}" "${7:--}" >> "$1"
}

# plan_tests VALUE prints a TESTS, FABRICTESTS or LEAFSPINETESTS field as a
# list: "" for "-" (and for a missing field, as in a five-field plan).
plan_tests() {
  if [ "${1:--}" = - ]; then echo; else echo "$1"; fi
}

# plan_join A B prints two '|'-joined lists as one.
plan_join() {
  if [ -n "$1" ] && [ -n "$2" ]; then echo "$1|$2"; else echo "$1$2"; fi
}
