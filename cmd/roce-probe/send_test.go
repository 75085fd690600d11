package main

import "testing"

// "1 probes" read badly in send's summary.
func TestPlural(t *testing.T) {
	for _, c := range []struct {
		got, want string
	}{
		{plural(1, "probe"), "1 probe"}, {plural(0, "probe"), "0 probes"}, {plural(2, "probe"), "2 probes"},
		{allOf(1, "probe"), "the probe"}, {allOf(3, "probe"), "all 3 probes"},
		{wasWere(1), "was"}, {wasWere(0), "were"},
	} {
		if c.got != c.want {
			t.Errorf("%q, want %q", c.got, c.want)
		}
	}
}
