# The run's plan (RUNDIR/plan), sourced by scripts/lab.sh, which writes it,
# and scripts/lab/guest.sh, which reads it. One line per test binary, five
# tab-separated fields:
#
#   NAME  PKGDIR  PKG  TESTS  FABRICTESTS
#
# TESTS are the tests of the package's *_lab_test.go files, FABRICTESTS
# those of its *_fabric_lab_test.go files, each '|'-joined, and "-" when
# there are none: never an empty field, because bash's read with
# IFS=$'\t' counts a tab as whitespace and merges the tabs around an empty
# field (a package with fabric tests only would have them read as its
# single-host tests). labreport reads the first three fields.

# plan_add FILE NAME PKGDIR PKG TESTS FABRICTESTS appends one line.
plan_add() {
  printf '%s\t%s\t%s\t%s\t%s\n' "$2" "$3" "$4" "${5:--}" "${6:--}" >> "$1"
}

# plan_tests VALUE prints a TESTS or FABRICTESTS field as a list: "" for
# "-".
plan_tests() {
  if [ "$1" = - ]; then echo; else echo "$1"; fi
}
