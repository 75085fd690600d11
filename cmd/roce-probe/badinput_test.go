package main

import (
	"strings"
	"testing"

	"github.com/roce-probe/roce-probe/internal/lab"
)

// TestBadInput runs every command with bad flag values and arguments. Each
// must exit 2 with one line on stderr naming the flag (or argument), the
// value given and what is allowed, print nothing on stdout, and never
// touch a device (the inputs are rejected before anything is read).
//
// The allowed ranges are the fields' own, not the code's: IBA / ibv_ah_attr
// sl is 4 bits (0..15), traffic_class and hop_limit are bytes (0..255),
// flow_label is 20 bits (0..0xfffff), sgid_index is a uint8_t (0..255),
// port_num counts from 1 in a uint8_t (1..255), QPNs are 24 bits
// (0..0xffffff), the Q_Key 32 bits; an 802.1Q VLAN ID is 12 bits
// (0..4095) and the SL of a probe is the IBA's 4 bits too (0..15); a UDP
// port is 16 bits. enum ibv_rate has no value 1 (0 is the port's rate).
// The fixtures' devices and ports are those host/testdata/README.md
// lists (mlx5_0 with ports 1 and 2). Commands' other limits (send --count
// 1..100000, --interval 0s..1h, listen --rate 0.1..10000) are the ones
// their --help documents.
func TestBadInput(t *testing.T) {
	// lab up/down must not run for any of these.
	fakeLab(t, func(lab.Options) error { t.Error("lab up ran on bad input"); return nil },
		func() error { t.Error("lab down ran on bad input"); return nil }, lab.Status{})
	mlx5 := fromArgs("mlx5")
	noRDMA := withoutRDMADevices(t, "mlx5") // a snapshot without RDMA devices
	// send reads the live host: these sysfs trees stand for a host with
	// mlx5_0 and one without RDMA devices (liveSysfs).
	mlx5Sys, noRDMASys := sysfsTestdata+"mlx5/sys", t.TempDir()
	defer func(old string) { liveSysfs = old }(liveSysfs)
	// with is base with args added; a flag of args that base has already
	// is taken out of base first (a single-value flag given twice is an
	// error of its own, tested with twice).
	with := func(base []string, args ...string) []string {
		given := map[string]bool{}
		for _, a := range args {
			if strings.HasPrefix(a, "-") {
				name, _, _ := strings.Cut(a, "=")
				given[name] = true
			}
		}
		var out []string
		for i := 0; i < len(base); i++ {
			if given[base[i]] {
				if i+1 < len(base) && !strings.HasPrefix(base[i+1], "-") {
					i++ // and its value
				}
				continue
			}
			out = append(out, base[i])
		}
		return append(out, args...)
	}
	twice := func(base []string, args ...string) []string {
		return append(append([]string{}, base...), args...)
	}
	check := with(append([]string{"check"}, mlx5...), "--dev", "mlx5_0", "--gid-index", "3", "--tclass", "106", "--sl", "3")
	checkCM := with(append([]string{"check"}, mlx5...), "--dev", "mlx5_0", "--gid-index", "3", "--rdma-cm")
	ahCmd := with(append([]string{"ah"}, mlx5...), "--dev", "mlx5_0", "--dst", "10.0.0.2", "--gid-index", "3")
	fromWC := with(append([]string{"ah"}, mlx5...), "--dev", "mlx5_0", "--from-wc", strings.Repeat("00", 40))
	selectCmd := with(append([]string{"select"}, mlx5...), "--dst", "10.0.0.2")
	send := []string{"send", "--dst", "192.0.2.2", "--netdev", "no-such-netdev0"}
	sendGID := []string{"send", "--dst", "192.0.2.2", "--dev", "mlx5_0", "--gid-index", "3"}

	for _, c := range []struct {
		args  []string
		want  []string // flag or argument, value, what is allowed
		sysfs string   // the live sysfs send reads ("": the machine's)
	}{
		// check
		{with(check, "--sl", "x"), []string{`--sl "x"`, "0..15"}, ""},
		{with(check, "--sl", "16"), []string{"--sl 16", "0..15"}, ""},
		{with(check, "--sl", "0x10"), []string{"--sl 0x10", "0..15"}, ""},
		{with(check, "--sl"), []string{"--sl needs a value", "0..15"}, ""},
		{with(check, "--tclass", "300"), []string{"--tclass 300", "0..255"}, ""},
		{with(check, "--tclass", ""), []string{`--tclass ""`, "0..255"}, ""},
		{with(check, "--tclass", "1.5"), []string{`--tclass "1.5"`, "0..255"}, ""},
		{with(checkCM, "--tos", "-1"), []string{"--tos -1", "0..255"}, ""},
		{with(checkCM, "--tos", "tos"), []string{`--tos "tos"`, "0..255"}, ""},
		{with(check, "--gid-index", "abc"), []string{`--gid-index "abc"`, "0..255"}, ""},
		{with(check, "--gid-index", "-1"), []string{"--gid-index -1", "0..255"}, ""},
		{with(check, "--gid-index", "99999999999999999999"), []string{"--gid-index 99999999999999999999", "0..255"}, ""},
		{with(check, "--port", "x"), []string{`--port "x"`, "1..255"}, ""},
		{with(check, "--port", "0"), []string{"--port 0", "1..255"}, ""},
		{with(check, "--port", "7"), []string{"--port 7", "mlx5_0 port 1, mlx5_0 port 2"}, ""},
		{with(check, "--dev", "nope0"), []string{`--dev "nope0"`, "no such RDMA device", "mlx5_0"}, ""},
		{with(check, "--rdma-cm=maybe"), []string{`--rdma-cm "maybe"`, "true or false"}, ""},
		{with(check, "--path", "bogus"), []string{`--path "bogus"`, "user-ah, kernel-ah or connected-qp"}, ""},
		{with(check, "-o", "yaml"), []string{`-o "yaml"`, "table or json"}, ""},
		{with(check, "-o"), []string{"-o/--output needs a value", "table or json"}, ""},
		{with(check, "extra"), []string{"check takes no arguments", `"extra"`}, ""},
		{[]string{"check", "--from", "/nonexistent-dir/snap.json", "--dev", "mlx5_0", "--gid-index", "3", "--tclass", "106", "--sl", "3"},
			[]string{`--from "/nonexistent-dir/snap.json"`, "no such file", "snapshot", "roce-probe collect"}, ""},
		// Every single-value flag given twice is an error, not "the last wins".
		{twice(check, "--gid-index", "4"), []string{"--gid-index given twice", `"3"`, `"4"`, "give it once"}, ""},
		{twice(check, "--from", fixture("rxe")), []string{"--from given twice", "give it once"}, ""},
		{twice(check, "--dev", "mlx5_0"), []string{"--dev given twice", "give it once"}, ""},
		{twice(check, "--sl", "3"), []string{"--sl given twice", "give it once"}, ""},
		{twice(check, "--path", "user-ah", "--path", "kernel-ah"), []string{"--path given twice", `"user-ah"`, `"kernel-ah"`}, ""},
		{twice(check, "-o", "json", "--output", "table"), []string{"-o/--output given twice", `"json"`, `"table"`}, ""},

		// qos
		{[]string{"qos", "--netdev", "no-such-netdev0"}, []string{`--netdev "no-such-netdev0"`, "no such network device", "ip link"}, ""},
		{with(append([]string{"qos"}, mlx5...), "--netdev", "no-such-netdev0"), []string{`--netdev "no-such-netdev0"`, "no such network device",
			"of the snapshot", "want one of lo, enp1s0f0, enp1s0f1, enp1s0f0.100, mv0, docker0"}, ""},
		{with(append([]string{"qos"}, mlx5...), "--dev", "nope0"), []string{`--dev "nope0"`, "no such RDMA device", "want one of mlx5_0"}, ""},
		{[]string{"qos", "--from", noRDMA, "--dev", "nope0"}, []string{`--dev "nope0"`, "no such RDMA device", "has none", "rxe_enp1s0f0"}, ""},
		// A flag group: no values to name, but the flags and what is allowed.
		{[]string{"qos", "--netdev", "x", "--dev", "y"}, []string{"--netdev", "--dev", "cannot be used together", "at most one of"}, ""},
		{twice(append([]string{"qos"}, mlx5...), "--netdev", "enp1s0f0", "--netdev", "enp1s0f1"), []string{"--netdev given twice"}, ""},

		// gids
		{with(append([]string{"gids"}, mlx5...), "--port", "x"), []string{`--port "x"`, "1..255"}, ""},
		{with(append([]string{"gids"}, mlx5...), "--port", "0"), []string{"--port 0", "1..255"}, ""},
		{with(append([]string{"gids"}, mlx5...), "--port", "3"), []string{"--port 3", "mlx5_0 port 1, mlx5_0 port 2"}, ""},
		{with(append([]string{"gids"}, mlx5...), "--dev", "nope0"), []string{`--dev "nope0"`, "want one of mlx5_0"}, ""},
		{[]string{"gids", "--from", noRDMA, "--dev", "nope0"}, []string{`--dev "nope0"`, "has none"}, ""},
		{twice(append([]string{"gids"}, mlx5...), "--port", "1", "--port", "2"), []string{"--port given twice", `"1"`, `"2"`}, ""},
		{with(append([]string{"gids"}, mlx5...), "--all=maybe"), []string{`--all "maybe"`, "true or false"}, ""},
		{[]string{"gids", "--netns", "roce-probe-no-such-netns"}, []string{`--netns "roce-probe-no-such-netns"`, "ip netns list"}, ""},
		{with(append([]string{"gids"}, mlx5...), "-o", "yaml"), []string{`-o "yaml"`, "want table or json"}, ""},
		{twice(append([]string{"gids"}, mlx5...), "-o", "json", "-o", "table"), []string{"-o/--output given twice"}, ""},

		// --from: a file that is not a snapshot this roce-probe reads.
		{[]string{"gids", "--from", "/nonexistent-dir/snap.json"}, []string{`--from "/nonexistent-dir/snap.json"`, "no such file", "roce-probe collect"}, ""},
		{[]string{"gids", "--from", t.TempDir()}, []string{"--from", "is a directory", "roce-probe collect"}, ""},

		// collect
		{[]string{"collect", "--out", "/nonexistent-dir/x.json"}, []string{`--out "/nonexistent-dir/x.json"`, "existing directory"}, ""},
		{[]string{"collect", "--out", t.TempDir()}, []string{"--out", "is a directory", "file name"}, ""},
		{[]string{"collect", "-o", "/nonexistent-dir/x.json"}, []string{`-o "/nonexistent-dir/x.json"`, "existing directory"}, ""},
		{[]string{"collect", "-o", "yaml"}, []string{`-o "yaml" is not known: want json`, "--out FILE"}, ""},
		{[]string{"collect", "--out", "a.json", "-o", "b.json"}, []string{`--out "a.json" and -o "b.json" both name where to write`}, ""},
		{[]string{"collect", "--hostname", "node 1"}, []string{`--hostname "node 1"`, "without spaces"}, ""},
		{[]string{"collect", "--hostname", ""}, []string{`--hostname "" is empty`}, ""},
		{[]string{"collect", "--netns", "a", "--all-netns"}, []string{"--all-netns and --netns cannot be used together"}, ""},
		{[]string{"collect", "--netns", "roce-probe-no-such-netns"}, []string{`--netns "roce-probe-no-such-netns"`, "ip netns list"}, ""},
		{[]string{"collect", "-o", "a.json", "-o", "b.json"}, []string{"-o/--output given twice"}, ""},
		{[]string{"collect", "extra"}, []string{"collect takes no arguments", `"extra"`}, ""},

		// select
		{with(selectCmd, "--dst", "x"), []string{`--dst "x"`, "IP address or GID"}, ""},
		{with(selectCmd, "--dst", "0.0.0.0"), []string{`--dst "0.0.0.0"`, "unspecified", "the peer's IP address or GID"}, ""},
		{with(selectCmd, "--dst", "::"), []string{`--dst "::"`, "unspecified", "the peer's IP address or GID"}, ""},
		{with(selectCmd, "--vlan", "x"), []string{`--vlan "x"`, "0..4095", `"none"`}, ""},
		{with(selectCmd, "--vlan", "4096"), []string{"--vlan 4096", "0..4095"}, ""},
		{with(selectCmd, "--dst", "::1"), []string{`--dst "::1"`, "loopback", "the peer's address"}, ""},
		{with(selectCmd, "--netdev", "no-such-netdev0"), []string{`--netdev "no-such-netdev0"`, "no such network device"}, ""},
		{twice(selectCmd, "--roce", "v1", "--roce", "v2"), []string{"--roce given twice"}, ""},
		{twice(selectCmd, "--dst", "10.0.0.3"), []string{"--dst given twice", `"10.0.0.2"`, `"10.0.0.3"`}, ""},
		{with(selectCmd, "--roce", "v3"), []string{`--roce "v3"`, "v1 or v2"}, ""},
		{with(selectCmd, "--family", "ipx"), []string{`--family "ipx"`, "ipv4 or ipv6"}, ""},
		{with(selectCmd, "--family", "ipv6"), []string{`--family ipv6`, `--dst "10.0.0.2"`, "IPv4"}, ""},
		{with(selectCmd, "--port", "x"), []string{`--port "x"`, "1..255"}, ""},
		{with(selectCmd, "-o", "yaml"), []string{`-o "yaml"`, "want table, json or env"}, ""},

		// ah
		{with(ahCmd, "--sl", "x"), []string{`--sl "x"`, "0..15"}, ""},
		{with(ahCmd, "--sl", "16"), []string{"--sl 16", "0..15"}, ""},
		{with(ahCmd, "--tclass", "256"), []string{"--tclass 256", "0..255"}, ""},
		{with(ahCmd, "--hop-limit", "-1"), []string{"--hop-limit -1", "0..255"}, ""},
		{with(ahCmd, "--flow-label", "0x100000"), []string{"--flow-label 0x100000", "0..0xfffff"}, ""},
		{with(ahCmd, "--flow-label", "fl"), []string{`--flow-label "fl"`, "0..0xfffff", "0x hex"}, ""},
		{with(ahCmd, "--gid-index", "abc"), []string{`--gid-index "abc"`, "0..255", "auto"}, ""},
		{with(ahCmd, "--gid-index", "256"), []string{"--gid-index 256", "0..255", "auto"}, ""},
		{with(ahCmd, "--static-rate", "1"), []string{"--static-rate 1", "0 (port rate)"}, ""},
		{with(ahCmd, "--dest-qpn", "0x1000000"), []string{"--dest-qpn 0x1000000", "0..0xffffff"}, ""},
		{with(ahCmd, "--src-qpn", "-1"), []string{"--src-qpn -1", "0..0xffffff"}, ""},
		{with(ahCmd, "--qkey", "0x100000000"), []string{"--qkey 0x100000000", "0..0xffffffff"}, ""},
		{with(ahCmd, "--port", "0"), []string{"--port 0", "1..255"}, ""},
		{with(ahCmd, "--dev", "nope0"), []string{`--dev "nope0"`, "want one of mlx5_0"}, ""},
		{with(ahCmd, "--dst", "10.0.0.300"), []string{`--dst "10.0.0.300"`, "IP address or GID"}, ""},
		{with(ahCmd, "--dst", "fe80::1%eth0"), []string{`--dst "fe80::1%eth0"`, "without %eth0"}, ""},
		{with(ahCmd, "--dst", "::1"), []string{`--dst "::1"`, "loopback"}, ""},
		{with(ahCmd, "--driver", "mxl5"), []string{`--driver "mxl5"`, "rxe, mlx5"}, ""},
		{with(ahCmd, "--path", "bogus"), []string{`--path "bogus"`, "user-ah, kernel-ah or connected-qp"}, ""},
		{with(ahCmd, "--pcap", "/nonexistent-dir/x.pcap"), []string{`--pcap "/nonexistent-dir/x.pcap"`, "existing directory"}, ""},
		{with(ahCmd, "--behaviour", "kernel"), []string{"--behaviour", "--from-wc"}, ""},
		{twice(ahCmd, "--sl", "1", "--sl", "2"), []string{"--sl given twice", `"1"`, `"2"`}, ""},
		{with(ahCmd, "--wc", "grh"), []string{"--wc", "--from-wc"}, ""},
		{with(ahCmd, "--netns", "roce-probe-no-such-netns"), []string{`--netns "roce-probe-no-such-netns"`, "no such network namespace", "in the snapshot"}, ""},
		{[]string{"ah", "--dev", "mlx5_0", "--dst", "10.0.0.2", "--gid-index", "3", "--netns", "roce-probe-no-such-netns"},
			[]string{`--netns "roce-probe-no-such-netns"`, "ip netns list"}, ""},
		{with(fromWC, "--dst", "10.0.0.2"), []string{"--dst and --from-wc cannot be used together"}, ""},
		{with(fromWC, "--wc", "vlan=5000"), []string{"--wc vlan 5000", "0..4095"}, ""},
		{with(fromWC, "--wc", "sl=16"), []string{"--wc sl 16", "0..15"}, ""},
		{with(fromWC, "--behaviour", "bsd"), []string{`--behaviour "bsd"`, "kernel", "rdma-core", "both"}, ""},
		{with(append([]string{"ah"}, mlx5...), "--dev", "mlx5_0", "--dst", "10.0.0.2"), []string{"one of --gid-index or --from-wc is required"}, ""},

		// decode
		{[]string{"decode"}, []string{"FILE", "pcap or pcapng", "- for standard input"}, ""},
		{[]string{"decode", "a.pcap", "b.pcap"}, []string{"one FILE", `"a.pcap"`}, ""},
		{[]string{"decode", "/nonexistent-dir/x.pcap"}, []string{`FILE "/nonexistent-dir/x.pcap"`, "no such file", "pcap or pcapng"}, ""},
		{[]string{"decode", "-o", "yaml", "x.pcap"}, []string{`-o "yaml"`, "want table, json or ndjson"}, ""},
		{[]string{"decode", "--summary=maybe", "x.pcap"}, []string{`--summary "maybe"`, "true or false"}, ""},

		// send: every value is checked before the netdev is looked at.
		{with(send, "--tclass", "x"), []string{`--tclass "x"`, "0..255"}, ""},
		{with(send, "--sl", "16"), []string{"--sl 16", "0..15"}, ""},
		{with(send, "--hop-limit", "0"), []string{"--hop-limit 0", "1..255"}, ""},
		{with(send, "--count", "x"), []string{`--count "x"`, "1..100000"}, ""},
		{with(send, "--count", "0"), []string{"--count 0", "1..100000"}, ""},
		{with(send, "--interval", "x"), []string{`--interval "x"`, "0s..1h"}, ""},
		{with(send, "--interval", "-1s"), []string{"--interval -1s", "0s..1h"}, ""},
		{with(send, "--timeout", "0s"), []string{"--timeout 0s", "more than 0s"}, ""},
		{with(send, "--resolve-timeout", "2m"), []string{"--resolve-timeout 2m", "at most 1m"}, ""},
		{with(send, "--sport", "65536"), []string{"--sport 65536", "0..65535"}, ""},
		{with(send, "--sweep", "ecn"), []string{`--sweep "ecn"`, "dscp or pcp"}, ""},
		{with(send, "--port", "2"), []string{"--netdev and --port cannot be used together"}, ""},
		{with(send, "-o", "yaml"), []string{`-o "yaml"`, "want table, json or ndjson"}, ""},
		{send, []string{`--netdev "no-such-netdev0"`, "no such network device"}, ""},
		{[]string{"send", "--dst", "x", "--netdev", "lo"}, []string{`--dst "x"`, "IP address or GID"}, ""},
		{[]string{"send", "--dst", "224.0.0.1", "--netdev", "lo"}, []string{`--dst "224.0.0.1"`, "unicast"}, ""},
		{with(sendGID, "--gid-index", "256"), []string{"--gid-index 256", "0..255"}, mlx5Sys},
		{with(sendGID, "--port", "0"), []string{"--port 0", "1..255"}, mlx5Sys},
		{with(sendGID, "--dev", "nope0"), []string{`--dev "nope0"`, "want one of mlx5_0"}, mlx5Sys},
		{with(sendGID, "--port", "3"), []string{"--port 3", "no such port on mlx5_0", "mlx5_0 port 1, mlx5_0 port 2"}, mlx5Sys},
		{[]string{"send", "--dst", "192.0.2.2", "--dev", "nope0", "--gid-index", "1"}, []string{`--dev "nope0"`, "no RDMA device", "--netdev"}, noRDMASys},
		{twice(send, "--count", "1", "--count", "2"), []string{"--count given twice"}, ""},
		{[]string{"send", "--dst", "::1", "--netdev", "lo"}, []string{`--dst "::1"`, "loopback"}, ""},
		{[]string{"send", "--dst", "192.0.2.2", "--dev", "mlx5_0"}, []string{"--dev and --gid-index go together", "--gid-index is missing"}, ""},
		{[]string{"send", "--dst", "192.0.2.2", "--gid-index", "3"}, []string{"--dev and --gid-index go together", "--dev is missing"}, ""},

		// listen
		{[]string{"listen", "--rate", "x"}, []string{`--rate "x"`, "0.1..10000"}, ""},
		{[]string{"listen", "--rate", "0"}, []string{"--rate 0", "0.1..10000"}, ""},
		{[]string{"listen", "--rate", "NaN"}, []string{"--rate NaN", "0.1..10000"}, ""},
		{[]string{"listen", "--duration", "x"}, []string{`--duration "x"`, "0s or more"}, ""},
		{[]string{"listen", "--duration", "-1s"}, []string{"--duration -1s", "0s or more"}, ""},
		{[]string{"listen", "--netdev", "no-such-netdev0"}, []string{`--netdev "no-such-netdev0"`, "no such network device"}, ""},
		{[]string{"listen", "-o", "yaml"}, []string{`-o "yaml"`, "want table, json or ndjson"}, ""},
		// An empty value is not the same as leaving the flag out
		// (listen --netdev "" would listen everywhere).
		{[]string{"listen", "--netdev", ""}, []string{`--netdev ""`, "is empty", "leave the flag out"}, ""},
		{with(append([]string{"gids"}, mlx5...), "--dev", ""), []string{`--dev ""`, "is empty"}, ""},
		{[]string{"qos", "--from", "", "--netdev", "lo"}, []string{`--from ""`, "is empty"}, ""},
		{with(ahCmd, "--from-wc", ""), []string{`--from-wc ""`, "is empty"}, ""},

		// lab and the command tree
		{[]string{"lab"}, []string{"lab needs a command", "up", "down", "status"}, ""},
		{[]string{"lab", "bogus"}, []string{`"bogus"`, "up", "down", "status"}, ""},
		{[]string{"lab", "up", "--timeout", "x"}, []string{`--timeout "x"`, "more than 0s"}, ""},
		{[]string{"lab", "up", "--timeout", "0s"}, []string{"--timeout 0s", "more than 0s"}, ""},
		{[]string{"lab", "up", "extra"}, []string{"takes no arguments", `"extra"`}, ""},
		{[]string{"bogus"}, []string{`"bogus"`, "gids", "check"}, ""},
		{[]string{"gid"}, []string{`"gid"`, "did you mean gids?"}, ""},
		{[]string{"version", "extra"}, []string{"takes no arguments", `"extra"`}, ""},
		{[]string{"help", "bogus"}, []string{`help "bogus"`, "no such command", "gids"}, ""},
		{[]string{"completion"}, []string{"completion needs a command", "bash", "zsh"}, ""},
		{[]string{"completion", "tcsh"}, []string{`"tcsh"`, "bash", "fish", "powershell", "zsh"}, ""},
	} {
		liveSysfs = c.sysfs
		checkUsageError(t, c.args, c.want)
	}
}

// checkUsageError runs roce-probe with args and checks a usage error: exit
// 2, nothing on stdout, one line on stderr starting with "roce-probe: "
// that contains each of want.
func checkUsageError(t *testing.T, args, want []string) {
	t.Helper()
	stdout, stderr, code := runCLI(t, "", args...)
	if code != exitUsage {
		t.Errorf("%q: exit %d, want %d (stderr %q)", args, code, exitUsage, stderr)
	}
	if stdout != "" {
		t.Errorf("%q: wrote %q to stdout, want nothing", args, stdout)
	}
	msg := strings.TrimSuffix(stderr, "\n")
	if !strings.HasPrefix(msg, "roce-probe: ") || strings.Contains(msg, "\n") {
		t.Errorf("%q: stderr %q, want one line starting with \"roce-probe: \"", args, stderr)
	}
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("%q: stderr %q does not contain %q", args, stderr, w)
		}
	}
}
