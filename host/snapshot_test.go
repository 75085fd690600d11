package host

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fixture loads the snapshot document testdata/<name>.json.
func fixture(t testing.TB, name string) *Snapshot {
	t.Helper()
	s, err := Load(filepath.Join("testdata", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Every fixture is a valid snapshot that re-encodes to itself.
func TestFixturesRoundTrip(t *testing.T) {
	for _, name := range []string{"rxe", "rxe-churned", "mlx5", "mlx5-dscp", "mlx5-pcp", "mlx5-counters", "mlx5-tcoverride", "mlx5-lag", "mlx5-lag-differ", "mlx5-pod"} {
		raw, err := os.ReadFile(filepath.Join("testdata", name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		s, err := Decode(bytes.NewReader(raw))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var out, indented bytes.Buffer
		if err := s.Encode(&out); err != nil {
			t.Fatal(err)
		}
		// Encode writes one line (a machine document: 35 % smaller, and
		// faster to read for a fleet); the fixtures are kept indented
		// for review.
		if bytes.Count(out.Bytes(), []byte("\n")) != 1 {
			t.Errorf("%s: Encode wrote %d lines, want one", name, bytes.Count(out.Bytes(), []byte("\n")))
		}
		if err := json.Indent(&indented, out.Bytes(), "", "  "); err != nil {
			t.Fatal(err)
		}
		if indented.String() != string(raw) {
			t.Errorf("%s: re-encoding differs from the file", name)
		}
	}
}

// Save writes gzip for .gz and plain JSON otherwise; Load reads both.
func TestSaveLoadGzip(t *testing.T) {
	s := fixture(t, "rxe")
	dir := t.TempDir()
	for _, name := range []string{"s.json", "s.json.gz"} {
		p := filepath.Join(dir, name)
		if err := s.Save(p); err != nil {
			t.Fatal(err)
		}
		raw, _ := os.ReadFile(p)
		gz := len(raw) > 2 && raw[0] == 0x1f && raw[1] == 0x8b
		if gz != strings.HasSuffix(name, ".gz") {
			t.Errorf("%s: gzip %v", name, gz)
		}
		back, err := Load(p)
		if err != nil {
			t.Fatal(err)
		}
		if back.Hostname != "fixture-rxe" || len(back.RDMA.Devices) != 1 {
			t.Errorf("%s: read back %q", name, back.Hostname)
		}
		if st, _ := os.Stat(p); st.Mode().Perm() != 0o644 {
			t.Errorf("%s: mode %v, want 0644", name, st.Mode().Perm())
		}
	}
	// Nothing half-written: a failing save leaves no file behind.
	if err := s.Save(filepath.Join(dir, "missing-dir", "s.json")); err == nil {
		t.Error("saving into a missing directory succeeded")
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 2 {
		t.Errorf("%d files in the directory, want the 2 written", len(ents))
	}
}

func TestDecodeErrors(t *testing.T) {
	valid, err := os.ReadFile(filepath.Join("testdata", "rxe.json"))
	if err != nil {
		t.Fatal(err)
	}
	edit := func(old, new string) string {
		if !bytes.Contains(valid, []byte(old)) {
			t.Fatalf("fixture has no %q", old)
		}
		return strings.Replace(string(valid), old, new, 1)
	}
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	zw.Write([]byte("not json"))
	zw.Close()
	for _, c := range []struct {
		in   string
		is   error
		want string
	}{
		{"", ErrNotSnapshot, "not JSON"},
		{"{", ErrNotSnapshot, "not JSON"},
		{"[1,2]", ErrNotSnapshot, ""},
		{`{"links": []}`, ErrNotSnapshot, `no "format" key`},
		{`{"format": "pcap", "version": 1}`, ErrNotSnapshot, `format "pcap"`},
		{`{"format": "roce-probe-snapshot"}`, ErrVersion, "no version"},
		{`{"format": "roce-probe-snapshot", "version": 2}`, ErrVersion, "version 2, this roce-probe reads version 1"},
		{zipped.String(), ErrNotSnapshot, "not JSON"},
		{string(valid) + "{}", ErrNotSnapshot, "after top-level value"},
		{edit(`"hostname": "fixture-rxe"`, `"hostname": "fixture-rxe", "color": "blue"`), nil, `the top level: unknown key "color"`},
		{edit(`"gid_table_len": 16`, `"gid_table_len": 2`), nil, "GID index 2: want 0..1"},
		{edit(`"port": 1,`, `"port": 0,`), nil, "port 0: want a port number 1..255"},
		{edit(`"gid": "fd00::1"`, `"gid": "fd00::zz"`), nil, "fd00::zz"},
		{edit(`"type": "RoCE v2"`, `"type": "RoCE v3"`), nil, `unknown GID type "RoCE v3"`},
		{edit(`"name": "veth0.100"`, `"name": "veth0"`), nil, `link "veth0" appears twice`},
		{edit(`"netns": null,
      "netdev": "veth0"`, `"netns": "blue",
      "netdev": "veth0"`), nil, `namespace "blue" is not in the snapshot`},
	} {
		_, err := Decode(strings.NewReader(c.in))
		if err == nil || (c.is != nil && !errors.Is(err, c.is)) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Decode(%.60q) = %v, want %v containing %q", c.in, err, c.is, c.want)
		}
	}
}

// A damaged gzip stream is an error naming gzip, not a half snapshot.
func TestDecodeTruncatedGzip(t *testing.T) {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	raw, _ := os.ReadFile(filepath.Join("testdata", "rxe.json"))
	zw.Write(raw)
	zw.Close()
	if _, err := Decode(bytes.NewReader(b.Bytes()[:b.Len()/2])); err == nil {
		t.Error("a truncated gzip snapshot decoded")
	}
}

// Decode survives any input: an error in the snapshot's terms (no Go type
// names) or a snapshot that validates and opens.
func FuzzDecode(f *testing.F) {
	for _, n := range []string{"rxe", "mlx5-dscp"} {
		if b, err := os.ReadFile(filepath.Join("testdata", n+".json")); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"format":"roce-probe-snapshot","version":1,"rdma":{"devices":[]},"namespaces":[{"links":[]}],"dcb":[]}`))
	f.Add([]byte(`{"format":"roce-probe-snapshot","version":1,"namespaces":[{"links":[{"ifindex":"1"}]}]}`))
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(`{"format":"roce-probe-snapshot","version":1,"errors":[[[[]]]]}`))
	zw.Close()
	f.Add(gz.Bytes())
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := Decode(bytes.NewReader(b))
		if err != nil {
			noGoNames(t, err)
			return
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("decoded but invalid: %v", err)
		}
		if v, err := s.View(""); err == nil {
			for _, p := range v.Ports {
				v.Stale(p)
				for _, e := range p.Entries {
					if !e.Empty {
						v.Source(p.Device, p.Port, e.Index)
					}
				}
			}
		}
	})
}

// DecodeWith SkipCounters: the snapshot without its counters sample, the
// rest as Decode reads it; the sample must still be JSON but is not
// checked.
func TestDecodeSkipCounters(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "mlx5-counters.json"))
	if err != nil {
		t.Fatal(err)
	}
	full, err := Decode(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	lean, err := DecodeWith(bytes.NewReader(raw), DecodeOptions{SkipCounters: true})
	if err != nil {
		t.Fatal(err)
	}
	if full.Counters == nil || lean.Counters != nil {
		t.Fatalf("counters: full %v, lean %v", full.Counters != nil, lean.Counters != nil)
	}
	full.Counters = nil
	var a, b bytes.Buffer
	full.Encode(&a)
	lean.Encode(&b)
	if a.String() != b.String() {
		t.Error("the lean snapshot differs from the full one without counters")
	}
	bad := strings.Replace(string(raw), `"rx_prio0_bytes": 1,`, `"rx_prio0_bytes": -1,`, 1)
	if bad == string(raw) {
		t.Fatal("fixture changed")
	}
	if _, err := Decode(strings.NewReader(bad)); err == nil {
		t.Error("a negative counter decoded")
	}
	if _, err := DecodeWith(strings.NewReader(bad), DecodeOptions{SkipCounters: true}); err != nil {
		t.Errorf("skipped counters were checked: %v", err)
	}
	broken := strings.Replace(string(raw), `"rx_prio0_bytes": 1,`, `"rx_prio0_bytes": 1,,`, 1)
	if _, err := DecodeWith(strings.NewReader(broken), DecodeOptions{SkipCounters: true}); !errors.Is(err, ErrNotSnapshot) || !strings.Contains(err.Error(), "not JSON") {
		t.Errorf("skipped counters that are not JSON: %v", err)
	}
	if _, err := DecodeWith(strings.NewReader(`{"format":"roce-probe-snapshot","version":1,"namespaces":[null]}`), DecodeOptions{SkipCounters: true}); err == nil || !strings.Contains(err.Error(), "namespaces[0] is null") {
		t.Errorf("null namespace: %v", err)
	}
}

// Snapshots collected before the operstates were named as the kernel names
// them spelled two as vishvananda/netlink does: they decode to the
// kernel's names, so that a VLAN on a down device is not up (and gets the
// same reasons) whether the snapshot is old or new.
func TestDecodeOldOperStateNames(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "rxe.json"))
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.Replace(b, []byte(`"operstate": "up"`), []byte(`"operstate": "lower-layer-down"`), 1)
	b = bytes.Replace(b, []byte(`"operstate": "up"`), []byte(`"operstate": "not-present"`), 1)
	s, err := Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	ns, err := s.Namespace("")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, l := range ns.Links {
		got[l.OperState]++
	}
	if got["lowerlayerdown"] != 1 || got["notpresent"] != 1 || got["lower-layer-down"]+got["not-present"] != 0 {
		t.Errorf("operstates %v: want one lowerlayerdown and one notpresent, none in netlink's spelling", got)
	}
}

// A snapshot written before the QP census was collected has no "census"
// key: it decodes, with Census nil; a census that contradicts itself is
// refused, naming the QP.
func TestSnapshotCensus(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "rxe.json"))
	if err != nil {
		t.Fatal(err)
	}
	old := bytes.Replace(raw, []byte("  \"census\": null,\n"), nil, 1)
	if bytes.Equal(old, raw) {
		t.Fatal("the fixture has no census key to remove")
	}
	s, err := Decode(bytes.NewReader(old))
	if err != nil || s.Census != nil {
		t.Fatalf("snapshot without census: %v, census %v", err, s.Census)
	}
	qp := `{"device":"rxe0","port":1,"qpn":17,"dest_qp":null,"type":"UD","subtype":null,"state":"RTS","sq_psn":0,"rq_psn":null,"path_mig_state":null,"pdn":null,"owner":"process","pid":7,"comm":"x","driver_attrs":[],"traffic_class":null,"sl":null,"dscp":null,"markings_reason":null}`
	dup := bytes.Replace(raw, []byte(`"census": null`), []byte(`"census": {"qps":[`+qp+`,`+qp+`],"cm_ids":[],"raw_qps":null,"sources":[]}`), 1)
	if _, err := Decode(bytes.NewReader(dup)); err == nil || !strings.Contains(err.Error(), "rxe0 QP 17 appears twice") {
		t.Errorf("duplicate QP: got %v", err)
	}
	// fabric's readers skip it: not decoded, not checked.
	if s, err := DecodeWith(bytes.NewReader(dup), DecodeOptions{SkipCensus: true}); err != nil || s.Census != nil {
		t.Errorf("SkipCensus: %v, census %v", err, s.Census)
	}
}
