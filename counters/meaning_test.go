package counters

import (
	"strconv"
	"strings"
	"testing"
)

// TestMeaningTexts: every meaning a driver table gives and every
// port-level counter Normalize gives has words, which are not the name
// again (the MEANING column of `roce-probe counters` showed
// out_of_sequence for out_of_sequence).
func TestMeaningTexts(t *testing.T) {
	for driver, ks := range rdmaTables {
		for _, k := range ks {
			txt := k.Meaning.Text()
			if len(strings.Fields(txt)) < 3 || txt == string(k.Meaning) || strings.Contains(txt, k.Name) {
				t.Errorf("%s %s: meaning %s has text %q: want words, not the name", driver, k.Name, k.Meaning, txt)
			}
		}
	}
	for driver, names := range portNames {
		for name, c := range names {
			txt := c.Text()
			if len(strings.Fields(txt)) < 3 || strings.Contains(txt, string(c)) || strings.Contains(txt, name) {
				t.Errorf("%s %s: counter %s has text %q: want words, not the name", driver, name, c, txt)
			}
		}
	}
	if Meaning("no_such").Text() != "" || PortCounter("no_such").Text() != "" {
		t.Error("an unknown meaning has a text")
	}
}

// TestPrioDiscards: the three mlx5 discard counters of a priority add up,
// with their rates, and a rate missing from one leaves the sum without
// one (hand-computed: 3 + 4 + 5 = 12 frames, 0.5 + 1.5 + 2 = 4 /s).
func TestPrioDiscards(t *testing.T) {
	r := func(f float64) *float64 { return &f }
	p := PrioReport{Values: map[PrioCounter]*PrioValue{
		PrioRxDiscards:    {Value: 3, Rate: r(0.5), Counter: "rx_prio3_discards"},
		PrioRxBufDiscard:  {Value: 4, Rate: r(1.5), Counter: "rx_prio3_buf_discard"},
		PrioRxCongDiscard: {Value: 5, Rate: r(2), Counter: "rx_prio3_cong_discard"},
		PrioRxPackets:     {Value: 1000, Rate: r(100), Counter: "rx_prio3_packets"},
	}}
	d := p.Discards()
	if d == nil || d.Value != 12 || d.Rate == nil || *d.Rate != 4 || d.Counter != "rx_prio3_discards + rx_prio3_buf_discard + rx_prio3_cong_discard" {
		t.Fatalf("Discards() = %+v; want 12 frames at 4/s", d)
	}
	p.Values[PrioRxBufDiscard].Rate = nil // a reset
	if d := p.Discards(); d == nil || d.Value != 12 || d.Rate != nil {
		t.Errorf("with a rate missing: %+v; want 12 and no rate", d)
	}
	if d := (&PrioReport{Values: map[PrioCounter]*PrioValue{PrioRxPause: {Value: 1}}}).Discards(); d != nil {
		t.Errorf("no discard counters: %+v; want nil", d)
	}
}

// TestHasError: only a finding of severity error makes the report one
// that fails.
func TestHasError(t *testing.T) {
	r := Report{Findings: []Finding{{Severity: SeverityWarning}, {Severity: SeverityInfo}}}
	if r.HasError() {
		t.Error("warnings and infos: HasError true")
	}
	r.Findings = append(r.Findings, Finding{Severity: SeverityError})
	if !r.HasError() {
		t.Error("an error finding: HasError false")
	}
}

// TestInputSelect: --dev, --dev --port and --netdev keep what
// docs/counters.md says, on a host with two devices on two netdevs.
func TestInputSelect(t *testing.T) {
	in := Input{
		Ports:   []PortInfo{{Device: "mlx5_0", Port: 1, Real: "eth0"}, {Device: "mlx5_0", Port: 2, Real: "eth1"}, {Device: "mlx5_1", Port: 1, Real: "eth2"}},
		Netdevs: []NetdevInfo{{Netdev: "eth0"}, {Netdev: "eth1"}, {Netdev: "eth2"}, {Netdev: "eth3"}},
	}
	names := func(in Input) string {
		var s []string
		for _, p := range in.Ports {
			s = append(s, p.Device+"/"+strconv.Itoa(p.Port))
		}
		for _, n := range in.Netdevs {
			s = append(s, n.Netdev)
		}
		return strings.Join(s, " ")
	}
	for _, c := range []struct {
		dev  string
		port int
		real string
		want string
	}{
		{"", 0, "", "mlx5_0/1 mlx5_0/2 mlx5_1/1 eth0 eth1 eth2 eth3"},
		{"mlx5_0", 0, "", "mlx5_0/1 mlx5_0/2 eth0 eth1"},
		{"mlx5_0", 2, "", "mlx5_0/2 eth1"},
		{"", 0, "eth2", "mlx5_1/1 eth2"},
		{"", 0, "eth3", "eth3"}, // a netdev without RDMA: its counters alone
		{"mlx5_9", 0, "", ""},
	} {
		if got := names(in.Select(c.dev, c.port, c.real)); got != c.want {
			t.Errorf("Select(%q, %d, %q) = %q; want %q", c.dev, c.port, c.real, got, c.want)
		}
	}
}
