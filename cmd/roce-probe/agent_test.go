package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"
)

// A bad agent configuration exits 2 before anything starts, naming the
// flag (or the file, line and field), the value and what is allowed.
func TestAgentBadConfigExits2(t *testing.T) {
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(content), 0o644)
		return p
	}
	unknown := file("unknown.yaml", "listen: :9469\nprobes:\n  rate: 2\n")
	rate := file("rate.yaml", "probe:\n  rate: 20\n")
	flow := file("flow.json", `{"flows": [{"name": "a", "select": {"netdev": "eth0", "family": "inet"}}]}`)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--probe-rate", "20"}, `--probe-rate 20 is out of range`},
		{[]string{"--interval", "10ms"}, `--interval`},
		{[]string{"--flow", "name=x,netdev=eth0,tclass=300"}, `--flow "name=x,netdev=eth0,tclass=300" (flow 1): tclass: 300 is out of range: want 0..255`},
		{[]string{"--flow", "name=x,speed=1"}, `--flow "name=x,speed=1" (flow 1): unknown key "speed" in a flow`},
		{[]string{"--flow", "name=x,device=mlx5_0,gid_index=3,netdev=eth0"}, `(flow 1): netdev: "eth0" given with gid_index`},
		{[]string{"--flow", "name=x", "--flow", "name=x"}, `(flow 2): name: "x" is also the name of flows[0]`},
		{[]string{"--peer", "nonsense"}, `--peer: "nonsense" is not a peer: want an IP address or NAME=ADDRESS`},
		{[]string{"--peers-dns", "10.0.0.1"}, `--peers-dns: "10.0.0.1" is an address`},
		{[]string{"--listen", ":99999"}, `--listen: ":99999" has port "99999": want a number 0..65535`},
		{[]string{"--config", unknown}, `--config ` + unknown + `:2: unknown key "probes" in the configuration: want one of listen, interval`},
		{[]string{"--config", rate}, `--config ` + rate + `: probe.rate: 20 is out of range: want 0.001..10`},
		{[]string{"--config", flow}, `flows[0].select.family: "inet": want ipv4 or ipv6`},
		{[]string{"--config", filepath.Join(dir, "none.yaml")}, `none.yaml: cannot be read: no such file or directory`},
		{[]string{"--log-level", "loud"}, `--log-level`},
		{[]string{"--listen", busy.Addr().String(), "--serve-only"}, `--listen "` + busy.Addr().String() + `"`},
		{[]string{"--snapshot", "partial"}, `--snapshot "partial" is not known: want full, roce or off`},
		{[]string{}, `no --flow given: the agent has nothing to probe and nothing to watch: want --flow`},
		{[]string{"--peer", "10.0.0.2"}, `--serve-only`},
	} {
		stdout, stderr, code := runCLI(t, "", append([]string{"agent"}, tc.args...)...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) || stdout != "" {
			t.Errorf("agent %s: exit %d, stderr %q, want exit 2 and …%s…", strings.Join(tc.args, " "), code, stderr, tc.want)
		}
	}
}

// A flag overrides the file's value; the file's value stands otherwise.
func TestAgentFlagsOverFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "a.yaml")
	os.WriteFile(p, []byte("interval: 30s\nprobe:\n  rate: 2\n  timeout: 700ms\nflows:\n  - name: f\n    select: {netdev: eth0}\n"), 0o644)
	c, f := agentCommand()
	if err := c.ParseFlags([]string{"--config", p, "--probe-rate", "3", "--flow", "name=g,netdev=eth1"}); err != nil {
		t.Fatal(err)
	}
	cfg, err := agentConfig(c, f)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Interval.String() != "30s" || cfg.Probe.Rate != 3 || cfg.Probe.Timeout.String() != "700ms" || len(cfg.Flows) != 1 || cfg.Flows[0].Name != "g" {
		t.Errorf("config %+v", cfg)
	}
}

// flowIndex reads the flow's index and key of a configuration field.
func TestFlowIndex(t *testing.T) {
	for _, tc := range []struct {
		field string
		i     int
		key   string
		ok    bool
	}{
		{"flows[0]", 0, "", true}, {"flows[2].name", 2, "name", true}, {"flows[12].select.netdev", 12, "netdev", true},
		{"flows[].name", 0, "", false}, {"flows[x].name", 0, "", false}, {"flows[1]name", 0, "", false},
		{"peers.static[0]", 0, "", false}, {"flows", 0, "", false}, {"flows[-1]", 0, "", false},
	} {
		i, key, ok := flowIndex(tc.field)
		if i != tc.i || key != tc.key || ok != tc.ok {
			t.Errorf("flowIndex(%q) = %d, %q, %v; want %d, %q, %v", tc.field, i, key, ok, tc.i, tc.key, tc.ok)
		}
	}
}

// agent --check-config checks the file, the flags and the web
// configuration file, says so and exits: 0 when valid, 2 naming the key
// or flag. It needs no privilege and reads nothing of the host (this test
// runs it unprivileged or not alike).
func TestAgentCheckConfig(t *testing.T) {
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	hash, err := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	authOnly := file("auth.yml", "basic_auth_users:\n  prometheus: "+string(hash)+"\n")
	noCert := file("nocert.yml", "tls_server_config:\n  cert_file: missing.crt\n  key_file: missing.key\n")
	plainPW := file("plain.yml", "basic_auth_users:\n  prometheus: pw\n")
	good := file("good.yaml", "flows:\n  - name: f\n    select: {netdev: eth0}\nsnapshot: roce\nweb_config_file: "+authOnly+"\n")
	noFlows := file("noflows.yaml", "peers:\n  static: [10.0.0.2]\n")
	serveOnly := file("serveonly.yaml", "serve_only: true\nsnapshot: off\n")
	badServeOnly := file("badserveonly.yaml", "serve_only: yes please\n")
	badWeb := file("badweb.yaml", "serve_only: true\nweb_config_file: "+noCert+"\n")
	badSnap := file("badsnap.yaml", "serve_only: true\nsnapshot: some\n")
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--config", good}, exitOK, "the agent's configuration is valid: listen :9469, 1 flow(s), snapshot roce, web configuration " + authOnly},
		{[]string{"--serve-only"}, exitOK, "0 flow(s), snapshot full, web configuration none"},
		{[]string{"--config", serveOnly}, exitOK, "snapshot off"},
		{[]string{"--serve-only", "--web.config.file", authOnly}, exitOK, "web configuration " + authOnly},
		{[]string{"--config", noFlows, "--flow", "name=f,netdev=eth0"}, exitOK, "1 flow(s)"},
		{[]string{}, exitUsage, "no --flow given: the agent has nothing to probe and nothing to watch: want --flow"},
		{[]string{"--config", noFlows}, exitUsage, "--config " + noFlows + ": flows: none: the agent has nothing to probe and nothing to watch (peers are probed once per flow): want at least one flow, or serve_only: true"},
		{[]string{"--config", badServeOnly}, exitUsage, `serve_only: "yes please" is not a boolean: want true or false`},
		{[]string{"--serve-only", "--web.config.file", noCert}, exitUsage, "--web.config.file: " + noCert + ": failed to read cert_file"},
		{[]string{"--serve-only", "--web.config.file", plainPW}, exitUsage, "--web.config.file: " + plainPW + ": basic_auth_users: a password is not a bcrypt hash"},
		{[]string{"--serve-only", "--web.config.file", filepath.Join(dir, "none.yml")}, exitUsage, "--web.config.file: " + filepath.Join(dir, "none.yml") + " cannot be read: no such file or directory"},
		{[]string{"--config", badWeb}, exitUsage, "--config " + badWeb + ": web_config_file: " + noCert + ": failed to read cert_file"},
		{[]string{"--config", badSnap}, exitUsage, "--config " + badSnap + `: snapshot: "some": want full (the whole snapshot), roce (the RoCE-relevant sections) or off (no /snapshot)`},
		{[]string{"--serve-only", "--probe-rate", "20"}, exitUsage, "--probe-rate 20 is out of range"},
	} {
		args := append([]string{"agent", "--check-config"}, tc.args...)
		stdout, stderr, code := runCLI(t, "", args...)
		out := stdout
		if tc.code != exitOK {
			out = stderr
		}
		if code != tc.code || !strings.Contains(out, tc.want) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit %d and …%s…", strings.Join(args, " "), code, stdout, stderr, tc.code, tc.want)
		}
		if tc.code != exitOK && stdout != "" {
			t.Errorf("%s: exit %d with stdout %q", strings.Join(args, " "), code, stdout)
		}
	}
}
