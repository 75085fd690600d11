package validate

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	promconfig "github.com/prometheus/prometheus/config"
	_ "github.com/prometheus/prometheus/discovery/kubernetes" // registers kubernetes_sd_configs
	"sigs.k8s.io/yaml"
)

// The file_sd example: host:port targets with a node label.
func TestFileSDTargets(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "prometheus", "targets", "roce-probe.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var groups []struct {
		Targets []string          `json:"targets"`
		Labels  map[string]string `json:"labels"`
	}
	if err := yaml.UnmarshalStrict(raw, &groups); err != nil {
		t.Fatal(err)
	}
	if len(groups) == 0 {
		t.Fatal("no target groups")
	}
	for _, g := range groups {
		if g.Labels["node"] == "" || len(g.Targets) == 0 {
			t.Errorf("%+v: want targets and a node label", g)
		}
		for _, tg := range g.Targets {
			if _, p, err := net.SplitHostPort(tg); err != nil || p != "9469" {
				t.Errorf("target %q: want HOST:9469", tg)
			}
		}
	}
}

// The Kubernetes scrape job, loaded by Prometheus's own configuration code
// (Debian's promtool has no Kubernetes discovery to check it with).
func TestKubernetesScrapeConfig(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "prometheus", "kubernetes-scrape.yml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := promconfig.Load(string(raw), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.ScrapeConfigs) != 1 || len(cfg.ScrapeConfigs[0].ServiceDiscoveryConfigs) != 1 || cfg.ScrapeConfigs[0].ServiceDiscoveryConfigs[0].Name() != "kubernetes" {
		t.Fatalf("%+v", cfg.ScrapeConfigs)
	}
	node := false
	for _, r := range cfg.ScrapeConfigs[0].RelabelConfigs {
		if r.TargetLabel == "node" {
			node = true
		}
	}
	if !node {
		t.Error("no node label")
	}
	if _, err := promconfig.Load(strings.Replace(string(raw), "relabel_configs", "relabel_config", 1), nil); err == nil {
		t.Error("a misspelt key loaded")
	}
}

// unit reads a systemd unit's [Service] settings: key → values (a key may
// repeat).
func unit(t *testing.T) map[string][]string {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "systemd", "roce-probe-agent.service"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]string{}
	section := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if l == "" || l[0] == '#' {
			continue
		}
		if l[0] == '[' {
			section = l
			continue
		}
		k, v, ok := strings.Cut(l, "=")
		if !ok {
			t.Fatalf("line %q", l)
		}
		if section == "[Service]" {
			out[k] = append(out[k], v)
		}
	}
	return out
}

// The systemd unit: an unprivileged dynamic user with CAP_NET_RAW only,
// and the sandbox.
func TestSystemdUnit(t *testing.T) {
	u := unit(t)
	for k, want := range map[string]string{
		"DynamicUser":             "yes",
		"AmbientCapabilities":     "CAP_NET_RAW",
		"CapabilityBoundingSet":   "CAP_NET_RAW",
		"NoNewPrivileges":         "yes",
		"ProtectSystem":           "strict",
		"ProtectHome":             "yes",
		"PrivateTmp":              "yes",
		"PrivateDevices":          "yes",
		"ProtectKernelTunables":   "yes",
		"ProtectKernelModules":    "yes",
		"ProtectControlGroups":    "yes",
		"RestrictNamespaces":      "yes",
		"RestrictSUIDSGID":        "yes",
		"LockPersonality":         "yes",
		"MemoryDenyWriteExecute":  "yes",
		"SystemCallArchitectures": "native",
	} {
		if got := u[k]; len(got) != 1 || got[0] != want {
			t.Errorf("%s=%v, want %s", k, got, want)
		}
	}
	if _, ok := u["User"]; ok {
		t.Error("User= with DynamicUser")
	}
	if _, ok := u["PrivateNetwork"]; ok {
		t.Error("PrivateNetwork: the agent needs the host's network namespace")
	}
	if got := u["ExecStart"]; len(got) != 1 || !strings.HasSuffix(got[0], "roce-probe agent --config /etc/roce-probe/agent.yaml") {
		t.Errorf("ExecStart=%v", got)
	}
}

// systemd itself reads the unit without a warning and rates its sandbox
// "OK" (exposure below 2.5 of 10).
func TestSystemdAnalyze(t *testing.T) {
	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		if os.Getenv("ROCE_PROBE_CI") != "" {
			t.Fatal("systemd-analyze not found (Debian package systemd)")
		}
		t.Skip("systemd-analyze not found (Debian package systemd)")
	}
	raw, err := os.ReadFile(filepath.Join("..", "systemd", "roce-probe-agent.service"))
	if err != nil {
		t.Fatal(err)
	}
	// verify wants the executable to exist.
	p := filepath.Join(t.TempDir(), "roce-probe-agent.service")
	if err := os.WriteFile(p, []byte(strings.ReplaceAll(string(raw), "/usr/local/bin/roce-probe", "/bin/true")), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(sa, "verify", p).CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
	out, _ = exec.Command(sa, "security", "--offline=yes", p).CombinedOutput()
	m := regexp.MustCompile(`Overall exposure level for \S+: ([0-9.]+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("systemd-analyze security: no exposure level\n%s", out)
	}
	if v, _ := strconv.ParseFloat(string(m[1]), 64); v >= 2.5 {
		t.Errorf("exposure level %v: want below 2.5", v)
	}
}

// The Dockerfile builds a static binary (no cgo) into an image without a
// shell: distroless/static or scratch.
func TestDockerfile(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	var froms []string
	var build, entry string
	for _, l := range strings.Split(string(raw), "\n") {
		l = strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(l, "FROM "):
			froms = append(froms, strings.Fields(l)[1])
		case strings.HasPrefix(l, "RUN ") && strings.Contains(l, "go build"):
			build = l
		case strings.HasPrefix(l, "ENTRYPOINT "):
			entry = l
		}
	}
	if len(froms) < 2 {
		t.Fatalf("FROM %v: want a build stage and a runtime stage", froms)
	}
	final := froms[len(froms)-1]
	if !strings.HasPrefix(final, "gcr.io/distroless/static") && final != "scratch" {
		t.Errorf("final image %s: want distroless/static or scratch", final)
	}
	if !strings.Contains(build, "CGO_ENABLED=0") || !strings.Contains(build, "./cmd/roce-probe") {
		t.Errorf("build %q: want CGO_ENABLED=0 go build ./cmd/roce-probe", build)
	}
	if !strings.Contains(entry, "roce-probe") {
		t.Errorf("ENTRYPOINT %q", entry)
	}
}
