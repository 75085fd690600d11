// Package testenv holds what roce-probe's tests share about their
// environment: finding an external tool such as tshark, which a test skips
// without on a developer's machine but must have in CI (ROCE_PROBE_CI=1,
// set by scripts/test.sh), where a missing tool is a failure; and reading
// the fields tshark (Wireshark's dissectors, the tests' independent
// decoder) prints for each frame of a capture; and reading the first frame of
// a pcap fixture (FirstFrame).
package testenv
