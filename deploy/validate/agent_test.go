package validate

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/roce-probe/roce-probe/internal/agent"
)

// systemdAgentConfig is the bare-metal example, relative to deploy/.
const systemdAgentConfig = "systemd/agent.yaml"

// agentConfigs finds every agent configuration deploy/ ships, by name:
// each entry of the Kubernetes ConfigMap (the DaemonSet's agents read it:
// TestManifestsFit), and every YAML or JSON file under deploy/ outside
// kubernetes/ (manifests only: LoadDir refuses any other document),
// prometheus/ (Prometheus's files: promtool and this module's tests read
// them), grafana/ (dashboards and their wrappers: grafana_test.go), this
// module and the web configurations (web-config.yml:
// TestWebConfigs). A new file elsewhere is taken for an agent
// configuration and must parse as one.
func agentConfigs(t *testing.T) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	cm := manifests(t).ConfigMap
	for k, v := range cm.Data {
		out[fmt.Sprintf("ConfigMap %s/%s key %s", cm.Namespace, cm.Name, k)] = []byte(v)
	}
	root := ".."
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			switch rel {
			case "kubernetes", "prometheus", "grafana", "validate":
				return filepath.SkipDir
			}
			return nil
		}
		if d.Name() == webConfigName {
			return nil // a web configuration (TestWebConfigs), not the agent's
		}
		switch filepath.Ext(p) {
		case ".yaml", ".yml", ".json":
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = b
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// deployed checks what the deployment needs of an agent beyond what the
// agent accepts: it probes (peers from somewhere and at least one flow;
// the agent itself runs without either) and serves on ":9469", every
// address of the host, port 9469: the port the DaemonSet's liveness
// probe, the Service and the Prometheus targets use.
func deployed(c agent.Config) error {
	if len(c.Peers.Static) == 0 && c.Peers.DNS == "" && c.Peers.File == "" {
		return errors.New("peers: none of static, dns, file: a deployed agent would probe nobody")
	}
	if len(c.Flows) == 0 {
		return errors.New("flows: none: a deployed agent would send no probes")
	}
	if c.Listen != ":9469" {
		return fmt.Errorf("listen %q: want \":9469\" (every address, port 9469)", c.Listen)
	}
	return nil
}

// Every agent configuration deploy/ ships is one the agent accepts, and
// one the deployment can use.
func TestAgentConfigs(t *testing.T) {
	cs := agentConfigs(t)
	var names []string
	for name := range cs {
		names = append(names, name)
	}
	sort.Strings(names)
	t.Logf("agent configurations: %q", names)
	if _, ok := cs[systemdAgentConfig]; !ok || len(cs) < 2 {
		t.Fatalf("found %q: want the ConfigMap's and %s at least", names, systemdAgentConfig)
	}
	for _, name := range names {
		c, err := agent.ReadConfig(cs[name], name)
		if err != nil {
			t.Errorf("%s: the agent refuses it: %v", name, err)
			continue
		}
		if err := deployed(c); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if name == systemdAgentConfig && c.Peers.File == "" {
			t.Errorf("%s: no peers.file: the bare-metal agent takes its peers from a file (docs/fabric.md)", name)
		}
	}
}

// Each shipped configuration, spoilt, is refused by the agent with its own
// message: the file and line (a decoding error) or the field, the value
// given and what is allowed (docs/agent.md's table). The jitter case is one
// deploy/validate's former copy of the schema accepted (it allowed up to 1).
func TestAgentConfigsSpoilt(t *testing.T) {
	for name, orig := range agentConfigs(t) {
		for _, tc := range []struct {
			what, old, new string
			field          string // the *agent.ConfigError's Field
			msg            string // in its Msg
			line           bool   // a decoding error: File and Line name the place
			at             string // where in new that place is ("": new's first line)
		}{
			{"misspelt key", "  jitter:", "  jiter:", "", `unknown key "jiter" in probe: want one of rate, timeout, jitter, max_rate`, true, ""},
			{"duration without a unit", "timeout: 1s\n", "timeout: 1\n", "probe.timeout", `"1" is not a duration`, true, ""},
			{"negative rate", "  rate: 1\n", "  rate: -1\n", "probe.rate", "-1 is out of range: want 0.001..10", false, ""},
			{"jitter the whole interval", "jitter: 0.2\n", "jitter: 0.95\n", "probe.jitter", "0.95 is out of range: want 0..0.9", false, ""},
			{"jitter as a duration", "jitter: 0.2\n", "jitter: 200ms\n", "probe.jitter", `"200ms" is not a number: want a decimal number`, true, ""},
			{"misspelt key in peers", "peers:\n", "peers:\n  fil: x\n", "", `unknown key "fil" in peers: want one of static, dns, dns_interval, file, file_interval, max`, true, "  fil: x"},
		} {
			bad := strings.Replace(string(orig), tc.old, tc.new, 1)
			if bad == string(orig) {
				t.Fatalf("%s, %s: %q is not in it any more: update the test", name, tc.what, tc.old)
			}
			_, err := agent.ReadConfig([]byte(bad), name)
			var ce *agent.ConfigError
			if !errors.As(err, &ce) || ce.Field != tc.field || !strings.Contains(ce.Msg, tc.msg) {
				t.Errorf("%s, %s: got %v, want a ConfigError of field %q saying …%s…", name, tc.what, err, tc.field, tc.msg)
				continue
			}
			at := tc.new
			if tc.at != "" {
				at = tc.at
			}
			if line := strings.Count(bad[:strings.Index(bad, at)], "\n") + 1; tc.line && (ce.File != name || ce.Line != line) {
				t.Errorf("%s, %s: %v: want it at %s:%d", name, tc.what, err, name, line)
			}
		}
	}
}

// What the agent accepts and deploy/validate's former copy of the schema
// refused: a flow selected by its netdev alone (the RoCE version and the
// family take their defaults, v2 and ipv4, and the port 1: docs/agent.md);
// and no peers, which the agent runs with and only the deployment refuses.
func TestAgentConfigsAgentAccepts(t *testing.T) {
	for name, orig := range agentConfigs(t) {
		const rule = "      roce: v2\n      family: ipv4\n"
		doc := strings.Replace(string(orig), rule, "      netdev: eth0.100\n", 1)
		if doc == string(orig) {
			t.Fatalf("%s: no flow selected by %q: update the test", name, rule)
		}
		c, err := agent.ReadConfig([]byte(doc), name)
		if err != nil {
			t.Errorf("%s, a flow selected by netdev alone: %v", name, err)
			continue
		}
		want := agent.SelectConfig{RoCE: "v2", Family: "ipv4", Netdev: "eth0.100", Port: 1}
		found := false
		for _, f := range c.Flows {
			if f.Select.Netdev == "eth0.100" && f.Select.Device == "" {
				found = reflect.DeepEqual(f.Select, want)
			}
		}
		if !found {
			t.Errorf("%s, a flow selected by netdev alone: flows %+v, want one selecting %+v", name, c.Flows, want)
		}
		if err := deployed(c); err != nil {
			t.Errorf("%s, a flow selected by netdev alone: %v", name, err)
		}

		c.Peers.Static, c.Peers.DNS, c.Peers.File = nil, "", ""
		if err := c.Validate(); err != nil {
			t.Errorf("%s without peers: the agent refuses it: %v", name, err)
		}
		if err := deployed(c); err == nil || !strings.HasPrefix(err.Error(), "peers: ") {
			t.Errorf("%s without peers: %v, want the deployment to refuse it", name, err)
		}
	}
}
